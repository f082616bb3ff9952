"""Copying healthd's samples out of its SQLite file into a DuckDB table, for the DuckDB baselines.

Through a CSV file, which DuckDB's native reader loads in parallel (DuckDB's sqlite extension would
need a download). The CSV is written by the `sqlite3` command-line shell where it is installed
(Debian: `apt-get install sqlite3`): 5.5 million rows took it 4.7 s of CPU where Python's sqlite3
and csv modules took 10.2 s (24 users, 2026-11-24), which lets the 96-user run (19 million rows)
have its DuckDB floor in a few minutes of a shared machine. Without the shell, Python writes it.
"""
import csv, os, shutil, subprocess, tempfile

TYPES = {"user_id": "BIGINT", "type_id": "INTEGER", "start_ms": "BIGINT", "end_ms": "BIGINT", "value": "DOUBLE",
         "source_id": "INTEGER"}


def _export_with_shell(path, csv_path, sql):
    """Writes the rows of `sql` (with a header line) to `csv_path` with the sqlite3 shell; False if there is none."""
    shell = shutil.which("sqlite3")
    if shell is None:
        return False
    with open(csv_path, "w") as handle:
        subprocess.run([shell, "-readonly", "-csv", "-header", path, sql], stdout=handle, check=True)
    return True


def copy_samples(source, con, columns, where, parameters):
    """Creates DuckDB table `samples` (on connection `con`) holding `columns` of the SQLite rows of
    `samples` that match `where`; returns how many rows were copied. `parameters` are integers
    (user and type row ids)."""
    path = next(row[2] for row in source.execute("PRAGMA database_list") if row[1] == "main")
    with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", delete=False) as handle:
        csv_path = handle.name
    # The shell takes no bound parameters: the integers are written into the statement.
    inlined = where
    for value in parameters:
        inlined = inlined.replace("?", str(int(value)), 1)
    sql = f"SELECT {', '.join(columns)} FROM samples WHERE {inlined}"
    if not _export_with_shell(path, csv_path, sql):
        with open(csv_path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            cursor = source.execute(f"SELECT {', '.join(columns)} FROM samples WHERE {where}", parameters)
            while True:
                chunk = cursor.fetchmany(100_000)
                if not chunk:
                    break
                writer.writerows(chunk)
    con.execute("SET enable_progress_bar = false")
    described = ", ".join(f"'{column}': '{TYPES[column]}'" for column in columns)
    con.execute(f"CREATE TABLE samples AS SELECT * FROM read_csv('{csv_path}', header = true, columns = {{{described}}})")
    os.remove(csv_path)
    return con.execute("SELECT count(*) FROM samples").fetchone()[0]
