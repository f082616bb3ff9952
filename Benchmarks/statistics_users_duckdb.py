#!/usr/bin/env python3
"""DuckDB beside `healthd-bench statistics-users`: each user's dashboard as GROUP BY queries, cold and warm.

Usage: statistics_users_duckdb.py SQLITE_PATH ORIGIN_MS END_MS UTC_OFFSET_MS [--year=USER_ROW_ID:YEAR_END_MS] USER_ROW_ID...
With --year, one more user is asked the same two queries from ORIGIN_MS to YEAR_END_MS once per pass
(after the others): the year-long figures.
The steps and heart-rate rows are copied out of healthd's SQLite file through a CSV file (`duckdb_copy.py`:
the sqlite3 shell where installed) into a DuckDB database file (DuckDB's sqlite extension would need a download). The file is then
closed and opened again, as healthd is restarted: the first pass over the users is DuckDB's cold
figure, the second its warm one. DuckDB answers an easier question than healthd: local days at a
fixed UTC offset (no DST), each sample counted in the day it starts in (no pro-rating), and both
step sources summed (no source merging). Needs `pip install duckdb` (a venv on PATH will do).
The last line is JSON for the benchmark to read.
"""
import json, os, sqlite3, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from duckdb_copy import copy_samples

try:
    import duckdb
except ImportError:
    print("  skipped: DuckDB is not installed (pip install duckdb)")
    print("JSON null")
    sys.exit(0)

path, origin, end, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
year = None
users = []
for argument in sys.argv[5:]:
    if argument.startswith("--year="):
        year_user, year_end = argument[len("--year="):].split(":")
        year = (int(year_user), int(year_end))
    else:
        users.append(int(argument))
source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
codes = dict(source.execute("SELECT name, id FROM type_codes WHERE name IN ('stepCount', 'heartRate')"))
directory = tempfile.mkdtemp(prefix="healthd-duckdb-")
database = os.path.join(directory, "samples.duckdb")
started = time.perf_counter()
con = duckdb.connect(database)
rows = copy_samples(source, con, ["user_id", "type_id", "start_ms", "end_ms", "value", "source_id"], "type_id IN (?, ?) ORDER BY user_id, type_id, start_ms",
                    (codes["stepCount"], codes["heartRate"]))
con.close()
print(f"  loaded {rows} rows into {database} in {time.perf_counter() - started:.1f} s (DuckDB {duckdb.__version__}); "
      "closed and opened again")

queries = [
    ("daily steps", f"SELECT (start_ms + {offset}) // 86400000 AS d, sum(value) FROM samples "
                    f"WHERE user_id = ? AND type_id = {codes['stepCount']} AND start_ms >= {origin} AND start_ms < {end} GROUP BY d"),
    ("daily heart rate avg/min/max", f"SELECT (start_ms + {offset}) // 86400000 AS d, avg(value), min(value), max(value) FROM samples "
                                     f"WHERE user_id = ? AND type_id = {codes['heartRate']} AND start_ms >= {origin} AND start_ms < {end} GROUP BY d"),
]
con = duckdb.connect(database, read_only=True)
figures = {}
for name in ("cold", "warm"):
    timings = [[] for _ in queries]
    for user in users:
        for position, (_, sql) in enumerate(queries):
            t = time.perf_counter()
            con.execute(sql, [user]).fetchall()
            timings[position].append((time.perf_counter() - t) * 1000)
    figures[name] = {}
    if year is not None:
        for query, sql in queries:
            t = time.perf_counter()
            con.execute(sql.replace(f"start_ms < {end}", f"start_ms < {year[1]}"), [year[0]]).fetchall()
            figures[name]["year " + query] = (time.perf_counter() - t) * 1000
            print(f"  DuckDB {name}, the year user, {query} over the year: {figures[name]['year ' + query]:.2f} ms")
    for (query, _), values in zip(queries, timings):
        values.sort()
        p50 = values[(len(values) + 1) // 2 - 1]
        p99 = values[max(0, min(len(values) - 1, -(-99 * len(values) // 100) - 1))]
        figures[name][query] = p50
        print(f"  DuckDB {name}, {query}: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(values)} users)")
con.close()
os.remove(database)
os.rmdir(directory)
print("JSON " + json.dumps(figures))
