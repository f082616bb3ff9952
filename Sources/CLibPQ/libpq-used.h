#ifndef HEALTHD_LIBPQ_USED_H
#define HEALTHD_LIBPQ_USED_H

// The declarations of libpq-fe.h (PostgreSQL 15) that healthd uses: opaque handles, the enum
// values it compares with, the two structs it reads, and the functions it calls. libpq.so.5's ABI
// has kept these unchanged since PostgreSQL 8.x; new values are only ever appended.

#include <dlfcn.h>
#include <stddef.h>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;

typedef enum {
    CONNECTION_OK,
    CONNECTION_BAD
} ConnStatusType;

typedef enum {
    PGRES_EMPTY_QUERY = 0,
    PGRES_COMMAND_OK,
    PGRES_TUPLES_OK,
    PGRES_COPY_OUT,
    PGRES_COPY_IN,
    PGRES_BAD_RESPONSE,
    PGRES_NONFATAL_ERROR,
    PGRES_FATAL_ERROR,
    PGRES_COPY_BOTH,
    PGRES_SINGLE_TUPLE,
    PGRES_PIPELINE_SYNC,
    PGRES_PIPELINE_ABORTED
} ExecStatusType;

typedef enum {
    PQTRANS_IDLE,
    PQTRANS_ACTIVE,
    PQTRANS_INTRANS,
    PQTRANS_INERROR,
    PQTRANS_UNKNOWN
} PGTransactionStatusType;

typedef struct pgNotify {
    char *relname;
    int be_pid;
    char *extra;
    struct pgNotify *next;
} PGnotify;

typedef struct _PQconninfoOption {
    char *keyword;
    char *envvar;
    char *compiled;
    char *val;
    char *label;
    char *dispchar;
    int dispsize;
} PQconninfoOption;

typedef void (*PQnoticeProcessor)(void *arg, const char *message);

/// The library, opened once (dlopen reference-counts; a racing second open returns the same handle).
static inline void *healthd_libpq_handle(void) {
    static void *handle;
    void *current = __atomic_load_n(&handle, __ATOMIC_ACQUIRE);
    if (current == NULL) {
        current = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
        if (current == NULL) current = dlopen("libpq.so", RTLD_NOW | RTLD_LOCAL);
        if (current != NULL) __atomic_store_n(&handle, current, __ATOMIC_RELEASE);
    }
    return current;
}

/// Nonzero when libpq could be loaded and has every function below. Callers check this before
/// the first libpq call: a missing function would otherwise be a call through NULL.
static inline int healthd_libpq_available(void);

#define HEALTHD_LIBPQ_SYMBOL(name) \
    static inline void *healthd_libpq_##name(void) { \
        static void *symbol; \
        void *current = __atomic_load_n(&symbol, __ATOMIC_ACQUIRE); \
        if (current == NULL) { \
            void *library = healthd_libpq_handle(); \
            current = library ? dlsym(library, #name) : NULL; \
            if (current != NULL) __atomic_store_n(&symbol, current, __ATOMIC_RELEASE); \
        } \
        return current; \
    }

#define HEALTHD_LIBPQ_FUNCTION(result, name, parameters, arguments) \
    HEALTHD_LIBPQ_SYMBOL(name) \
    static inline result name parameters { \
        return ((result (*) parameters) healthd_libpq_##name()) arguments; \
    }

HEALTHD_LIBPQ_FUNCTION(PGconn *, PQconnectdbParams, (const char *const *keywords, const char *const *values, int expand_dbname), (keywords, values, expand_dbname))
HEALTHD_LIBPQ_FUNCTION(ConnStatusType, PQstatus, (const PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(char *, PQerrorMessage, (const PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(void, PQfinish, (PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg))
HEALTHD_LIBPQ_FUNCTION(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(int, PQbackendPID, (const PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(int, PQsocket, (const PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(PGresult *, PQexec, (PGconn *conn, const char *query), (conn, query))
HEALTHD_LIBPQ_FUNCTION(PGresult *, PQexecParams, (PGconn *conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat), (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat))
HEALTHD_LIBPQ_FUNCTION(PGresult *, PQprepare, (PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), (conn, stmtName, query, nParams, paramTypes))
HEALTHD_LIBPQ_FUNCTION(PGresult *, PQexecPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths, const int *paramFormats, int resultFormat), (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat))
HEALTHD_LIBPQ_FUNCTION(PGresult *, PQgetResult, (PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(int, PQputCopyData, (PGconn *conn, const char *buffer, int nbytes), (conn, buffer, nbytes))
HEALTHD_LIBPQ_FUNCTION(int, PQputCopyEnd, (PGconn *conn, const char *errormsg), (conn, errormsg))
HEALTHD_LIBPQ_FUNCTION(int, PQconsumeInput, (PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(PGnotify *, PQnotifies, (PGconn *conn), (conn))
HEALTHD_LIBPQ_FUNCTION(ExecStatusType, PQresultStatus, (const PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(char *, PQresultErrorMessage, (const PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode))
HEALTHD_LIBPQ_FUNCTION(int, PQntuples, (const PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(int, PQnfields, (const PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(char *, PQfname, (const PGresult *res, int field_num), (res, field_num))
HEALTHD_LIBPQ_FUNCTION(Oid, PQftype, (const PGresult *res, int field_num), (res, field_num))
HEALTHD_LIBPQ_FUNCTION(char *, PQcmdTuples, (PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
HEALTHD_LIBPQ_FUNCTION(int, PQgetlength, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
HEALTHD_LIBPQ_FUNCTION(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))
HEALTHD_LIBPQ_FUNCTION(void, PQclear, (PGresult *res), (res))
HEALTHD_LIBPQ_FUNCTION(void, PQfreemem, (void *ptr), (ptr))
HEALTHD_LIBPQ_FUNCTION(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg), (conninfo, errmsg))
HEALTHD_LIBPQ_FUNCTION(void, PQconninfoFree, (PQconninfoOption *connOptions), (connOptions))

static inline int healthd_libpq_available(void) {
    return healthd_libpq_handle() != NULL
        && healthd_libpq_PQconnectdbParams() && healthd_libpq_PQstatus() && healthd_libpq_PQerrorMessage()
        && healthd_libpq_PQfinish() && healthd_libpq_PQsetNoticeProcessor() && healthd_libpq_PQtransactionStatus()
        && healthd_libpq_PQbackendPID() && healthd_libpq_PQsocket() && healthd_libpq_PQexec()
        && healthd_libpq_PQexecParams() && healthd_libpq_PQprepare() && healthd_libpq_PQexecPrepared()
        && healthd_libpq_PQgetResult() && healthd_libpq_PQputCopyData() && healthd_libpq_PQputCopyEnd()
        && healthd_libpq_PQconsumeInput() && healthd_libpq_PQnotifies() && healthd_libpq_PQresultStatus()
        && healthd_libpq_PQresultErrorMessage() && healthd_libpq_PQresultErrorField() && healthd_libpq_PQntuples()
        && healthd_libpq_PQnfields() && healthd_libpq_PQfname() && healthd_libpq_PQftype() && healthd_libpq_PQcmdTuples()
        && healthd_libpq_PQgetvalue() && healthd_libpq_PQgetlength() && healthd_libpq_PQgetisnull()
        && healthd_libpq_PQclear() && healthd_libpq_PQfreemem() && healthd_libpq_PQconninfoParse()
        && healthd_libpq_PQconninfoFree();
}

#endif
