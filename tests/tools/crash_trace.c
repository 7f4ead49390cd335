// SPDX-License-Identifier: Apache-2.0
// A diagnostic preload (LD_PRELOAD=libcrash_trace.so): on SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT
// it prints which thread faulted (the main thread or another), the faulting address, the stack as
// glibc's backtrace() sees it and the process's executable mappings, so that an address in a
// shared library can be turned into a source line (addr2line -e LIB OFFSET) after the fact. Then it
// re-raises the signal with the default action, so the exit status is the same as without it.
// Used by tests/tools/exit_stress.sh; built only for that (not part of the library).
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void say(const char* s) { (void)!write(2, s, strlen(s)); }

static void on_fault(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  char line[256];
  const long tid = syscall(SYS_gettid);
  snprintf(line, sizeof line, "\n*** crash_trace: signal %d (%s) at address %p in thread %ld (%s thread), pid %d\n", sig,
           strsignal(sig), info != NULL ? info->si_addr : NULL, tid, tid == getpid() ? "the main" : "another", getpid());
  say(line);
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  say("*** crash_trace: executable mappings\n");
  const int fd = open("/proc/self/maps", O_RDONLY);
  if (fd >= 0) {
    char buf[4096];
    ssize_t got;
    // Only the lines with execute permission: enough to place every frame.
    char rest[8192];
    size_t used = 0;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < got; ++i) {
        if (used < sizeof rest - 1) rest[used++] = buf[i];
        if (buf[i] == '\n') {
          rest[used] = 0;
          if (used > 20 && strstr(rest, " r-xp ") != NULL) say(rest);
          used = 0;
        }
      }
    }
    close(fd);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void* warm[2];
  (void)backtrace(warm, 2);  // loads libgcc_s now, not inside the handler
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) sigaction(sigs[i], &sa, NULL);
}
