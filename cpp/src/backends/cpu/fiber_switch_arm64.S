/* User-mode context switch for FiberGroup (fiber.cpp), arm64 AAPCS64 (Linux
 * and Apple). Assembles to nothing on other targets, so a build may list both
 * .S files.
 *
 * Only what the ABI makes callee-saved is kept: x19-x28, x29 (fp), x30 (lr),
 * sp and the low halves d8-d15 of v8-v15. x18 is the platform register on
 * Apple and is left alone. FPCR is not switched: it stays the thread's.
 */
#if defined(__aarch64__) && !defined(_WIN32)

#if defined(__APPLE__)
/* Mach-O gives C symbols a leading underscore and has no .type/.size; Apple's
 * arm64 assembler reads ';' as a comment, so macros separate with %%. */
#define SYM(name) _##name
#define FUNC(name) .globl SYM(name) %% .private_extern SYM(name) %% .p2align 2 %% SYM(name):
#define END(name)
#else
#define SYM(name) name
#define FUNC(name) .globl name; .hidden name; .type name, %function; .p2align 2; name:
#define END(name) .size name, .-name
#endif

    .text

/* void metalcall_fiber_switch(void** save_sp [x0], void* load_sp [x1])
 * Frame, lowest address first (160 bytes; fiber.cpp builds the first one):
 *   x19..x28 (+0..+72), x29 (+80), x30 (+88), d8..d15 (+96..+152). */
FUNC(metalcall_fiber_switch)
    hint    #34                 /* bti c: a no-op unless BTI is enforced */
    sub     sp, sp, #160
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mov     x2, sp
    str     x2, [x0]
    mov     sp, x1
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8,  d9,  [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    add     sp, sp, #160
    ret
END(metalcall_fiber_switch)

/* A new fiber's first switch "returns" here (through x30) with sp
 * 16-aligned, fn in x20 and arg in x19. fn never returns. CFI marks the
 * outermost frame so that unwinders stop here. */
FUNC(metalcall_fiber_start)
    .cfi_startproc
    .cfi_undefined x30
    mov     x0, x19
    blr     x20
    brk     #0
    .cfi_endproc
END(metalcall_fiber_start)

#endif

#if defined(__ELF__)
/* No executable stack wanted. */
    .section .note.GNU-stack,"",%progbits

#if defined(__ARM_FEATURE_BTI_DEFAULT) || defined(__ARM_FEATURE_PAC_DEFAULT)
/* Built with -mbranch-protection: say that this object is BTI/PAC-compatible
 * (every indirectly called entry has bti c; lr is saved and restored as is),
 * or the linker drops BTI for the whole binary. */
    .pushsection .note.gnu.property, "a"
    .balign 8
    .long   4                   /* name size */
    .long   16                  /* descriptor size */
    .long   5                   /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz  "GNU"
    .long   0xc0000000          /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
    .long   4
    .long   3                   /* BTI | PAC */
    .long   0
    .popsection
#endif
#endif
