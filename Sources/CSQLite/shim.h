#if __has_include(<sqlite3.h>)
#include <sqlite3.h>
#else
#include "sqlite3-fallback.h"
#endif
