// libpq, reached at run time: healthd builds on a machine without libpq-dev (the README's first
// command needs nothing but Swift), and only `--database postgres://...` needs libpq5 installed.
// libpq-used.h declares the part of libpq's stable ABI (libpq.so.5) that healthd calls; each
// function below resolves its symbol with dlsym on first use.
#include "libpq-used.h"
