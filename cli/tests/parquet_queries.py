"""The queries of docs/PARQUET.md, run by DuckDB over a dataset of
`tbrw export parquet`.

    python3 cli/tests/parquet_queries.py [--time] DIR QUERY [ARG...]

prints the answer as one JSON list of rows (lists) on stdout. QUERY is one of
the names in QUERIES; ARG fills the query's `$1`, `$2`... Exit status 3 when
the duckdb module cannot be imported (the Rust tests then skip). `--time`
also prints to stderr the seconds taken by `import duckdb` and by the views,
query and fetch (the figures of docs/PARQUET.md's "Scale", which leave out
the interpreter's start).
"""

import json
import sys
import time

START = time.perf_counter()
try:
    import duckdb
except ImportError as e:  # the tests skip with a note
    print(f"duckdb not importable: {e}", file=sys.stderr)
    sys.exit(3)

TABLES = ["runs", "samples", "intervals", "modules", "processes", "threads", "events", "functions", "stacks"]

# The views docs/PARQUET.md creates: every table with its host and run
# columns from the run's folder (DIR/host=H/run=R/TABLE.parquet), kept as text.
VIEW = (
    "CREATE VIEW {t} AS SELECT * FROM read_parquet('{dir}/*/*/{t}.parquet', "
    "hive_partitioning = true, hive_types_autocast = false)"
)
# The samples with each row's place in its file (file_row_number), to check
# the order the rows were written in.
SAMPLE_ROWS = (
    "CREATE VIEW sample_rows AS SELECT * FROM read_parquet('{dir}/*/*/samples.parquet', "
    "hive_partitioning = true, hive_types_autocast = false, file_row_number = true)"
)
# Every row of every table in one read (one glob: what a reader of the
# whole dataset sees at one moment), with the file each row is from.
ALL_ROWS = (
    "CREATE VIEW all_rows AS SELECT * FROM read_parquet('{dir}/**/*.parquet', "
    "hive_partitioning = true, hive_types_autocast = false, union_by_name = true, filename = true)"
)

QUERIES = {
    # Top modules across hosts and runs.
    "top_modules": """
        SELECT coalesce(m.name, '[unknown]') AS module, count(*) AS samples
        FROM samples s LEFT JOIN modules m USING (host, run, module_id)
        WHERE s.ip IS NOT NULL
        GROUP BY ALL ORDER BY samples DESC, module
    """,
    # Samples per module of one run.
    "modules_of_run": """
        SELECT coalesce(m.name, '[unknown]') AS module, count(*) AS samples
        FROM samples s LEFT JOIN modules m USING (host, run, module_id)
        WHERE s.run = $1 AND s.stream = 0
        GROUP BY ALL ORDER BY samples DESC, module
    """,
    # A function's share per run over time (buckets of $2 ns).
    "function_share": """
        SELECT s.run, (s.time_ns // $2) * $2 AS bucket_ns,
               count(*) FILTER (WHERE f.name = $1) AS hits, count(*) AS samples,
               round(100.0 * count(*) FILTER (WHERE f.name = $1) / count(*), 2) AS percent
        FROM samples s LEFT JOIN functions f USING (host, run, function_id)
        GROUP BY ALL ORDER BY s.run, bucket_ns
    """,
    # Tasks whose backend bound exceeds $1 percent.
    "backend_bound": """
        SELECT run, record, tid, core, start_ns, duration_ns, backend_bound
        FROM intervals WHERE backend_bound > $1
        ORDER BY run, record
    """,
    # The difference between two runs (stream 0), per module: samples and percent.
    "run_diff": """
        WITH per AS (
            SELECT s.run, coalesce(m.name, '[unknown]') AS module, count(*) AS samples,
                   100.0 * count(*) / sum(count(*)) OVER (PARTITION BY s.run) AS percent
            FROM samples s LEFT JOIN modules m USING (host, run, module_id)
            WHERE s.run IN ($1, $2) AND s.stream = 0
            GROUP BY s.run, module)
        SELECT module, coalesce(a.samples, 0) AS samples_a, coalesce(b.samples, 0) AS samples_b,
               round(coalesce(b.percent, 0) - coalesce(a.percent, 0), 2) AS percent_change
        FROM (SELECT * FROM per WHERE run = $1) a FULL JOIN (SELECT * FROM per WHERE run = $2) b USING (module)
        ORDER BY abs(percent_change) DESC, module
    """,
    # Calls (or samples) per thread of one run and stream.
    "threads_of_run": """
        SELECT tid, count(*) AS n FROM (
            SELECT run, stream, tid FROM intervals UNION ALL SELECT run, stream, tid FROM samples)
        WHERE run = $1 AND stream = $2
        GROUP BY ALL ORDER BY n DESC, tid
    """,
    # Per run and stream, in the order of the rows in the file: rows, rows
    # earlier in time than the one before, rows of the same time as the one
    # before but an earlier record (a sort that is not stable), distinct records.
    "time_order": """
        WITH r AS (
            SELECT host, run, stream, record, time,
                   lag(time) OVER w AS prev_time, lag(record) OVER w AS prev_record
            FROM sample_rows
            WINDOW w AS (PARTITION BY host, run, stream ORDER BY file_row_number))
        SELECT run, stream, count(*) AS rows,
               count(*) FILTER (WHERE time < prev_time) AS backwards,
               count(*) FILTER (WHERE time = prev_time AND record < prev_record) AS ties_reordered,
               count(DISTINCT record) AS records
        FROM r GROUP BY ALL ORDER BY run, stream
    """,
    # The calls (intervals) of one run and stream, in record order.
    "calls_of_run": """
        SELECT record, name, tid, start_ns, end_ns, net_ns, gross_ns
        FROM intervals WHERE run = $1 AND stream = $2
        ORDER BY record
    """,
    # Calls per name of one run and stream.
    "calls_by_name": """
        SELECT name, count(*) AS calls, sum(net_ns) AS net_ns FROM intervals
        WHERE run = $1 AND stream = $2
        GROUP BY ALL ORDER BY calls DESC, name
    """,
    # Samples per event of one run (stream 0).
    "events_of_run": """
        SELECT e.name AS event, count(*) AS samples
        FROM samples s LEFT JOIN events e USING (host, run, stream, event_id)
        WHERE s.run = $1 AND s.stream = 0
        GROUP BY ALL ORDER BY samples DESC, event
    """,
    # Per run, from one read of every table: the rows of `samples` and
    # `intervals` seen and the counts its `runs` row records (null: no
    # `runs` row seen). Equal for every run unless a reader saw part of one.
    "run_completeness": """
        SELECT host, run,
               count(*) FILTER (WHERE parse_filename(filename) = 'samples.parquet') AS sample_rows,
               max(samples) FILTER (WHERE parse_filename(filename) = 'runs.parquet') AS samples_recorded,
               count(*) FILTER (WHERE parse_filename(filename) = 'intervals.parquet') AS interval_rows,
               max(intervals) FILTER (WHERE parse_filename(filename) = 'runs.parquet') AS intervals_recorded
        FROM all_rows GROUP BY ALL ORDER BY host, run
    """,
    # Per function, the samples of one run (stream 0) whose stack holds it
    # (inclusive: each sample once, however many of its frames are in the
    # function): each distinct stack walked up to its outermost frame by a
    # recursive CTE over the stack nodes, weighed by its samples. Samples
    # without a stack count for their own function.
    "inclusive_functions": """
        WITH RECURSIVE leaf AS (
            SELECT host, run, stack_id, count(*) AS samples FROM samples
            WHERE run = $1 AND stream = 0 AND stack_id IS NOT NULL GROUP BY ALL),
        up(host, run, leaf, node) AS (
            SELECT host, run, stack_id, stack_id FROM leaf
            UNION ALL
            SELECT up.host, up.run, up.leaf, st.parent FROM up JOIN stacks st
              ON st.host = up.host AND st.run = up.run AND st.stack_id = up.node
            WHERE st.parent IS NOT NULL),
        named AS (
            SELECT DISTINCT up.host, up.run, up.leaf, f.name FROM up
            JOIN stacks st ON st.host = up.host AND st.run = up.run AND st.stack_id = up.node
            JOIN functions f ON f.host = st.host AND f.run = st.run AND f.function_id = st.function_id)
        SELECT name AS function, sum(samples) AS samples FROM (
            SELECT n.name, l.samples FROM named n
            JOIN leaf l ON l.host = n.host AND l.run = n.run AND l.stack_id = n.leaf
            UNION ALL
            SELECT f.name, 1 FROM samples s JOIN functions f USING (host, run, function_id)
            WHERE s.run = $1 AND s.stream = 0 AND s.stack_id IS NULL)
        GROUP BY ALL ORDER BY samples DESC, function
    """,
    # The runs, one row each.
    "runs": """
        SELECT host, run, host_name, import_kind, samples, intervals, source_file
        FROM runs ORDER BY host, run
    """,
}


def main():
    argv = sys.argv[1:]
    timed = argv[:1] == ["--time"]
    if timed:
        argv = argv[1:]
    if len(argv) < 2 or argv[1] not in QUERIES:
        print(f"usage: {sys.argv[0]} [--time] DIR {{{'|'.join(QUERIES)}}} [ARG...]", file=sys.stderr)
        sys.exit(2)
    folder, name, args = argv[0], argv[1], argv[2:]
    imported = time.perf_counter()
    con = duckdb.connect()
    for t in TABLES:
        con.execute(VIEW.format(t=t, dir=folder.replace("'", "''")))
    con.execute(SAMPLE_ROWS.format(dir=folder.replace("'", "''")))
    con.execute(ALL_ROWS.format(dir=folder.replace("'", "''")))
    params = [int(a) if a.lstrip("-").isdigit() else a for a in args]
    rows = con.execute(QUERIES[name], params).fetchall()
    done = time.perf_counter()
    print(json.dumps([list(r) for r in rows], default=str))
    if timed:
        print(
            f"import duckdb {imported - START:.3f} s; connect, views, query {name} and fetch {done - imported:.3f} s",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
