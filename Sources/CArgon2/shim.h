#if __has_include(<argon2.h>)
#include <argon2.h>
#else
#include "argon2-used.h"
#endif
