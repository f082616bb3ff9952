"""Copying healthd's samples out of its SQLite file into a DuckDB table, for the DuckDB baselines.

Through a CSV file: DuckDB's CSV reader is native and fast; row inserts from Python are not (and
DuckDB's sqlite extension would need a download).
"""
import csv, os, tempfile

TYPES = {"user_id": "BIGINT", "type_id": "INTEGER", "start_ms": "BIGINT", "end_ms": "BIGINT", "value": "DOUBLE",
         "source_id": "INTEGER"}


def copy_samples(source, con, columns, where, parameters):
    """Creates DuckDB table `samples` (on connection `con`) holding `columns` of the SQLite rows of
    `samples` that match `where`; returns how many rows were copied."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", delete=False) as handle:
        csv_path = handle.name
        writer = csv.writer(handle)
        writer.writerow(columns)
        cursor = source.execute(f"SELECT {', '.join(columns)} FROM samples WHERE {where}", parameters)
        rows = 0
        while True:
            chunk = cursor.fetchmany(100_000)
            if not chunk:
                break
            writer.writerows(chunk)
            rows += len(chunk)
    described = ", ".join(f"'{column}': '{TYPES[column]}'" for column in columns)
    con.execute(f"CREATE TABLE samples AS SELECT * FROM read_csv('{csv_path}', header = true, columns = {{{described}}})")
    os.remove(csv_path)
    return rows
