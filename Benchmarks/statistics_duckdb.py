#!/usr/bin/env python3
"""DuckDB baseline for `healthd-bench statistics`: the same three GROUP BY queries over the same rows.

Usage: statistics_duckdb.py SQLITE_PATH USER_ROW_ID ORIGIN_MS YEAR_END_MS JUNE_MS
Rows are copied out of healthd's SQLite file through a CSV file (`duckdb_copy.py`) into an in-memory
DuckDB table (DuckDB's sqlite extension would need a download, which this machine cannot make). Needs `pip install duckdb`.
"""
import os, sqlite3, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from duckdb_copy import copy_samples

try:
    import duckdb
except ImportError:
    print("  skipped: DuckDB is not installed (pip install duckdb)")
    sys.exit(0)

path, user, origin, year_end, june = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
codes = dict(source.execute("SELECT name, id FROM type_codes WHERE name IN ('stepCount', 'heartRate')"))
con = duckdb.connect()
started = time.perf_counter()
rows = copy_samples(source, con, ["type_id", "start_ms", "end_ms", "value", "source_id"], "user_id = ? AND type_id IN (?, ?)",
                    (user, codes["stepCount"], codes["heartRate"]))
print(f"  loaded {rows} rows in {time.perf_counter() - started:.1f} s (DuckDB {duckdb.__version__})")
seoul = 9 * 3_600_000
queries = [
    ("daily step sums", f"SELECT (start_ms + {seoul}) // 86400000 AS d, sum(value) FROM samples WHERE type_id = {codes['stepCount']} AND start_ms >= {origin} AND start_ms < {year_end} GROUP BY d"),
    ("hourly step sums", f"SELECT (start_ms + {seoul}) // 3600000 AS h, sum(value) FROM samples WHERE type_id = {codes['stepCount']} AND start_ms >= {june} AND start_ms < {june + 30 * 86_400_000} GROUP BY h"),
    ("daily heart rate avg/min/max", f"SELECT (start_ms + {seoul}) // 86400000 AS d, avg(value), min(value), max(value) FROM samples WHERE type_id = {codes['heartRate']} AND start_ms >= {origin} AND start_ms < {year_end} GROUP BY d"),
]
for name, sql in queries:
    times = []
    for _ in range(30):
        t = time.perf_counter()
        result = con.execute(sql).fetchall()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    print(f"  {name}: p50 {times[len(times) // 2]:.1f} ms, p99 {times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]:.1f} ms ({len(result)} groups, 30 runs)")
