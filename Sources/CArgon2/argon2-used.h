// The part of libargon2's C API that healthd uses, declared as in the reference implementation's
// argon2.h (20171227, the version Debian ships), for a machine that has the runtime library
// (libargon2.so.1) but not the libargon2-dev header. Only included when <argon2.h> is missing.
#ifndef HEALTHD_ARGON2_USED_H
#define HEALTHD_ARGON2_USED_H

#include <stddef.h>
#include <stdint.h>


typedef enum Argon2_ErrorCodes {
    ARGON2_OK = 0,
    ARGON2_MEMORY_ALLOCATION_ERROR = -22
} argon2_error_codes;

typedef int (*allocate_fptr)(uint8_t **memory, size_t bytes_to_allocate);
typedef void (*deallocate_fptr)(uint8_t *memory, size_t bytes_to_allocate);

typedef struct Argon2_Context {
    uint8_t *out;
    uint32_t outlen;
    uint8_t *pwd;
    uint32_t pwdlen;
    uint8_t *salt;
    uint32_t saltlen;
    uint8_t *secret;
    uint32_t secretlen;
    uint8_t *ad;
    uint32_t adlen;
    uint32_t t_cost;
    uint32_t m_cost;
    uint32_t lanes;
    uint32_t threads;
    uint32_t version;
    allocate_fptr allocate_cbk;
    deallocate_fptr free_cbk;
    uint32_t flags;
} argon2_context;

typedef enum Argon2_type { Argon2_d = 0, Argon2_i = 1, Argon2_id = 2 } argon2_type;

typedef enum Argon2_version {
    ARGON2_VERSION_10 = 0x10,
    ARGON2_VERSION_13 = 0x13,
    ARGON2_VERSION_NUMBER = ARGON2_VERSION_13
} argon2_version;

int argon2_ctx(argon2_context *context, argon2_type type);
const char *argon2_error_message(int error_code);

#endif
