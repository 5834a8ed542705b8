// Minimal Foundation, libdispatch and libmalloc declarations for the Linux check of the
// Metal backend. Hand-written from Apple's public documentation, NOT taken from an SDK:
// only what cpp/src/backends/metal uses, with the types Apple documents, so clang can
// check the Objective-C++ (ARC, blocks, generics, fast enumeration). Extend it when the
// backend starts using more of Foundation. generate_headers.py installs it as
// <Foundation/Foundation.h>; <dispatch/dispatch.h> and <malloc/malloc.h> include it.
#pragma once

#include <Availability.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__OBJC__) || !defined(__cplusplus)
#error "the metal_check headers are for Objective-C++ only"
#endif

#if defined(__APPLE__) && defined(__arm64__)
typedef bool BOOL;
#else
typedef signed char BOOL;
#endif
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil nullptr

typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef double CFTimeInterval;

@class NSString;
@class Protocol;

@protocol NSObject
- (BOOL)isEqual:(id)object;
- (NSUInteger)hash;
- (BOOL)conformsToProtocol:(Protocol*)aProtocol;
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
@end

typedef struct {
  unsigned long state;
  id __unsafe_unretained* itemsPtr;
  unsigned long* mutationsPtr;
  unsigned long extra[5];
} NSFastEnumerationState;

@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState*)state
                                  objects:(id __unsafe_unretained[])buffer
                                    count:(NSUInteger)len;
@end

typedef NSUInteger NSStringEncoding;
enum : NSStringEncoding { NSUTF8StringEncoding = 4 };

@interface NSString : NSObject
+ (instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
- (instancetype)initWithBytes:(const void*)bytes length:(NSUInteger)len encoding:(NSStringEncoding)encoding;
- (const char*)UTF8String;
- (NSUInteger)length;
@end

// The class of @"…" literals under the GNUstep runtime.
@interface NSConstantString : NSString
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSFastEnumeration>
- (NSUInteger)count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
@end

@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSFastEnumeration>
- (NSUInteger)count;
- (ObjectType)objectForKey:(KeyType)aKey;
@end

@interface NSMutableDictionary<KeyType, ObjectType> : NSDictionary<KeyType, ObjectType>
+ (instancetype)dictionaryWithCapacity:(NSUInteger)numItems;
- (void)setObject:(ObjectType)anObject forKey:(KeyType)aKey;
@end

@interface NSError : NSObject
- (NSString*)domain;
- (NSInteger)code;
- (NSDictionary<NSString*, id>*)userInfo;
- (NSString*)localizedDescription;
@end

@interface NSProcessInfo : NSObject
+ (NSProcessInfo*)processInfo;
- (NSString*)operatingSystemVersionString;
@end

// libdispatch: dispatch objects are Objective-C objects (ARC manages them).
@protocol OS_dispatch_object <NSObject>
@end
@protocol OS_dispatch_data <OS_dispatch_object>
@end
@protocol OS_dispatch_queue <OS_dispatch_object>
@end
typedef NSObject<OS_dispatch_data>* dispatch_data_t;
typedef NSObject<OS_dispatch_queue>* dispatch_queue_t;
typedef void (^dispatch_block_t)(void);
#define DISPATCH_DATA_DESTRUCTOR_DEFAULT NULL
extern "C" dispatch_data_t dispatch_data_create(const void* buffer, size_t size, dispatch_queue_t queue,
                                                dispatch_block_t destructor) __attribute__((ns_returns_retained));

// libmalloc (malloc_size(3)): bytes of the block `ptr` starts, 0 if it is not one.
extern "C" size_t malloc_size(const void* ptr);
