/*
 * uml-xstate-fix.c - LD_PRELOAD shim for the host's linux.uml (Debian user-mode-linux 6.1).
 *
 * Why: UML saves/restores the FPU state of its guest processes (which are host processes
 * it ptrace()s) with PTRACE_GETREGSET/PTRACE_SETREGSET(NT_X86_XSTATE) using a buffer
 * of its own idea of the XSAVE size (2696 bytes on an AVX-512 CPU).  The host kernel's
 * xstateregs_set() insists on count == fpu_user_cfg.max_size, which on a CPU with AMX
 * (XTILEDATA, dynamically enabled) is 11008 bytes.  So every SETREGSET fails with EFAULT,
 * UML calls fatal_sigsegv() for the very first guest process, and init dies:
 *   "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b".
 * (GETREGSET with a short buffer is fine: the kernel truncates.)
 *
 * Fix: interpose ptrace(); for a short PTRACE_SETREGSET(NT_X86_XSTATE) read the tracee's
 * full XSAVE image, overlay UML's (shorter) image on its start - x87/SSE/AVX/AVX-512/PKRU
 * and the XSAVE header all lie inside the first 2696 bytes - and write the full image.
 * Guest processes never get AMX permission (arch_prctl(ARCH_REQ_XCOMP_PERM) is a guest
 * syscall, handled by UML), so the AMX components past UML's buffer are always in init state.
 *
 * Build: cc -O2 -shared -fPIC -o uml-xstate-fix.so uml-xstate-fix.c -ldl
 * Use:   LD_PRELOAD=/path/uml-xstate-fix.so linux.uml ...   (uml-run.sh does this)
 * Env UML_XSTATE_FIX_DEBUG=1 prints one line per fixed-up call kind to stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

#define XBUF_MAX (64 * 1024)
static unsigned char xbuf[XBUF_MAX] __attribute__((aligned(64)));
static size_t host_xsize;          /* learned from the first full GETREGSET */
static int reported;

static long raw_ptrace(long req, pid_t pid, void *addr, void *data)
{
    return syscall(SYS_ptrace, req, pid, addr, data);
}

long ptrace(enum __ptrace_request request, ...)
{
    static long (*real)(enum __ptrace_request, ...);
    va_list ap;
    va_start(ap, request);
    pid_t pid = va_arg(ap, pid_t);
    void *addr = va_arg(ap, void *);
    void *data = va_arg(ap, void *);
    va_end(ap);

    if (request == PTRACE_SETREGSET && (long)addr == NT_X86_XSTATE && data) {
        struct iovec *uiov = data;
        struct iovec full = { xbuf, XBUF_MAX };
        if (raw_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &full) == 0 &&
            uiov->iov_len < full.iov_len) {
            size_t n = uiov->iov_len;
            host_xsize = full.iov_len;
            memcpy(xbuf, uiov->iov_base, n);
            if (!reported && getenv("UML_XSTATE_FIX_DEBUG")) {
                reported = 1;
                fprintf(stderr, "uml-xstate-fix: SETREGSET(NT_X86_XSTATE) %zu -> %zu bytes\n",
                        n, host_xsize);
            }
            long r = raw_ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &full);
            if (r == 0)
                uiov->iov_len = n;   /* look unchanged to the caller */
            return r;
        }
        /* fall through: let the kernel give its own answer */
    }
    if (!real)
        real = (long (*)(enum __ptrace_request, ...))dlsym(RTLD_NEXT, "ptrace");
    return real(request, pid, addr, data);
}
