/* A slow disk for the end-to-end checks: every fsync and fdatasync of the process sleeps
 * SLOW_FSYNC_US microseconds (default 700000) first. LD_PRELOAD it into healthd to check that a
 * bound such as "a revoked stream ends within one second" is the server's, not the disk's
 * (a CI machine's fsyncs took about half a second). Built by .ci/run; see docs/architecture.md. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static void slow_down(void) {
    const char *text = getenv("SLOW_FSYNC_US");
    long micros = text ? atol(text) : 700000;
    if (micros > 0) usleep((useconds_t)micros);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow_down();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow_down();
    return real(fd);
}
