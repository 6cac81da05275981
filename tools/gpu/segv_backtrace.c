/* tools/gpu/segv_backtrace.c — LD_PRELOAD helper for a crash on a machine
 * without gdb: on SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT it prints every
 * frame of the native stack as "FILE +0xOFFSET (SYMBOL)" on stderr (offsets
 * for `addr2line -f -C -e FILE 0xOFFSET`), then dies of the same signal.
 *   cc -shared -fPIC -O1 -o segv_backtrace.so segv_backtrace.c -ldl
 *   LD_PRELOAD=$PWD/segv_backtrace.so PYTHONFAULTHANDLER= python3 ...
 * (Python's faulthandler would replace the handler: leave it off.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_crash(int sig) {
    void *frames[96];
    int n = backtrace(frames, 96);
    char line[1024];
    int len = snprintf(line, sizeof line, "\n== native stack at signal %d (%s) ==\n", sig, strsignal(sig));
    write(2, line, (size_t)len);
    for (int i = 0; i < n; i++) {
        Dl_info d;
        memset(&d, 0, sizeof d);
        if (dladdr(frames[i], &d) && d.dli_fname)
            len = snprintf(line, sizeof line, "#%d %s +0x%lx (%s)\n", i, d.dli_fname,
                           (unsigned long)((char *)frames[i] - (char *)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
        else
            len = snprintf(line, sizeof line, "#%d %p\n", i, frames[i]);
        write(2, line, (size_t)(len < (int)sizeof line ? len : (int)sizeof line - 1));
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_crash;
        sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
        sigaction(sigs[i], &sa, NULL);
    }
}
