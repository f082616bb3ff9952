#if __has_include(<sqlite3.h>)
#include <sqlite3.h>
#else
#include "sqlite3-used.h"
#endif

// sqlite3_config is variadic, which Swift cannot call. SQLite's memory statistics take a global
// mutex around every allocation; healthd reads none of them, so they are turned off before the
// first connection opens. Returns SQLITE_MISUSE (harmlessly) if SQLite was already initialized.
static inline int healthd_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
