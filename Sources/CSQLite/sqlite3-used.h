// The part of SQLite's C API that healthd uses, declared as in SQLite's sqlite3.h (3.40), for a
// machine that has the runtime library (libsqlite3.so.0) but not the libsqlite3-dev header.
// Only included when <sqlite3.h> is missing. Add a declaration here when Sources/SQLite starts
// calling a new function or constant; values and prototypes are SQLite's stable ABI.
#ifndef HEALTHD_SQLITE3_USED_H
#define HEALTHD_SQLITE3_USED_H

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef long long int sqlite3_int64;
typedef unsigned long long int sqlite3_uint64;
typedef void (*sqlite3_destructor_type)(void*);

// Result codes.
#define SQLITE_OK           0
#define SQLITE_ERROR        1
#define SQLITE_BUSY         5
#define SQLITE_LOCKED       6
#define SQLITE_READONLY     8
#define SQLITE_IOERR       10
#define SQLITE_CORRUPT     11
#define SQLITE_FULL        13
#define SQLITE_CANTOPEN    14
#define SQLITE_CONSTRAINT  19
#define SQLITE_MISMATCH    20
#define SQLITE_MISUSE      21
#define SQLITE_RANGE       25
#define SQLITE_ROW        100
#define SQLITE_DONE       101

// Flags and enumerations.
#define SQLITE_OPEN_READONLY      0x00000001
#define SQLITE_OPEN_READWRITE     0x00000002
#define SQLITE_OPEN_CREATE        0x00000004
#define SQLITE_OPEN_NOMUTEX       0x00008000
#define SQLITE_PREPARE_PERSISTENT 0x01
#define SQLITE_UTF8               1
#define SQLITE_INTEGER            1
#define SQLITE_FLOAT              2
#define SQLITE_TEXT               3
#define SQLITE_BLOB               4
#define SQLITE_NULL               5
#define SQLITE_CHECKPOINT_PASSIVE  0
#define SQLITE_CHECKPOINT_FULL     1
#define SQLITE_CHECKPOINT_RESTART  2
#define SQLITE_CHECKPOINT_TRUNCATE 3
#define SQLITE_CONFIG_MEMSTATUS    9

// Library and connections.
int sqlite3_config(int, ...);
sqlite3_int64 sqlite3_memory_used(void);
void sqlite3_free(void*);
const char *sqlite3_errstr(int);
int sqlite3_open_v2(const char *filename, sqlite3 **ppDb, int flags, const char *zVfs);
int sqlite3_close_v2(sqlite3*);
int sqlite3_extended_result_codes(sqlite3*, int onoff);
int sqlite3_extended_errcode(sqlite3 *db);
const char *sqlite3_errmsg(sqlite3*);
int sqlite3_busy_timeout(sqlite3*, int ms);
int sqlite3_get_autocommit(sqlite3*);
sqlite3_int64 sqlite3_last_insert_rowid(sqlite3*);
sqlite3_int64 sqlite3_changes64(sqlite3*);
sqlite3_int64 sqlite3_total_changes64(sqlite3*);
int sqlite3_exec(sqlite3*, const char *sql, int (*callback)(void*,int,char**,char**), void *, char **errmsg);
int sqlite3_wal_checkpoint_v2(sqlite3 *db, const char *zDb, int eMode, int *pnLog, int *pnCkpt);

// Statements.
int sqlite3_prepare_v2(sqlite3 *db, const char *zSql, int nByte, sqlite3_stmt **ppStmt, const char **pzTail);
int sqlite3_prepare_v3(sqlite3 *db, const char *zSql, int nByte, unsigned int prepFlags,
                       sqlite3_stmt **ppStmt, const char **pzTail);
int sqlite3_finalize(sqlite3_stmt *pStmt);
int sqlite3_reset(sqlite3_stmt *pStmt);
int sqlite3_step(sqlite3_stmt*);
int sqlite3_stmt_busy(sqlite3_stmt*);
const char *sqlite3_sql(sqlite3_stmt *pStmt);
int sqlite3_bind_parameter_count(sqlite3_stmt*);
int sqlite3_clear_bindings(sqlite3_stmt*);
int sqlite3_bind_null(sqlite3_stmt*, int);
int sqlite3_bind_int64(sqlite3_stmt*, int, sqlite3_int64);
int sqlite3_bind_double(sqlite3_stmt*, int, double);
int sqlite3_bind_text64(sqlite3_stmt*, int, const char*, sqlite3_uint64, void(*)(void*), unsigned char encoding);
int sqlite3_bind_blob64(sqlite3_stmt*, int, const void*, sqlite3_uint64, void(*)(void*));
int sqlite3_bind_zeroblob(sqlite3_stmt*, int, int n);
int sqlite3_column_count(sqlite3_stmt *pStmt);
const char *sqlite3_column_name(sqlite3_stmt*, int N);
int sqlite3_column_type(sqlite3_stmt*, int iCol);
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt*, int iCol);
double sqlite3_column_double(sqlite3_stmt*, int iCol);
const unsigned char *sqlite3_column_text(sqlite3_stmt*, int iCol);
const void *sqlite3_column_blob(sqlite3_stmt*, int iCol);
int sqlite3_column_bytes(sqlite3_stmt*, int iCol);

#endif
