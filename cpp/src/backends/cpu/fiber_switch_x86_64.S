/* User-mode context switch for FiberGroup (fiber.cpp), x86-64 System V.
 * Assembles to nothing on other targets, so a build may list both .S files.
 *
 * Only what the ABI makes callee-saved is kept: rbx, rbp, r12-r15, rsp.
 * Everything else is already dead across a call, so a switch costs a few ns
 * and no system call (glibc's swapcontext also saves the signal mask with a
 * syscall). The floating-point control state (MXCSR, the x87 control word)
 * is not switched: kernels cannot change it (MSL has no such control), so it
 * stays the thread's, as FPCR does on arm64. Loading MXCSR at every switch
 * cost more than the rest of the switch on Intel cores.
 */
#if defined(__x86_64__) && !defined(_WIN32)

#if defined(__APPLE__)
/* Mach-O gives C symbols a leading underscore and has no .type/.size. */
#define SYM(name) _##name
#define FUNC(name) .globl SYM(name); .private_extern SYM(name); .p2align 4; SYM(name):
#define END(name)
#else
#define SYM(name) name
#define FUNC(name) .globl name; .hidden name; .type name, @function; .p2align 4; name:
#define END(name) .size name, .-name
#endif

    .text

/* void metalcall_fiber_switch(void** save_sp [rdi], void* load_sp [rsi])
 * Frame, lowest address first (56 bytes; fiber.cpp builds the first one):
 *   +0 r15, r14, r13, r12, rbx, rbp, +48 return. */
FUNC(metalcall_fiber_switch)
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
END(metalcall_fiber_switch)

/* A new fiber's first switch "returns" here with rsp 16-aligned, fn in r13
 * and arg in r12. fn never returns. CFI marks the outermost frame so that
 * debuggers and unwinders stop here instead of walking into garbage. */
FUNC(metalcall_fiber_start)
    .cfi_startproc
    .cfi_undefined rip
    movq    %r12, %rdi
    callq   *%r13
    ud2
    .cfi_endproc
END(metalcall_fiber_start)

#endif

#if defined(__ELF__)
/* No executable stack wanted. */
    .section .note.GNU-stack,"",@progbits
#endif
