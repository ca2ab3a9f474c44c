"""The Spark queries of docs/PARQUET.md ("The same in Spark"), run by
PySpark in local mode over a dataset of `tbrw export parquet`.

    python3 cli/tests/spark_queries.py DIR

prints one JSON object on stdout: each query's answer as a list of rows
(lists). Exit status 3 when pyspark cannot be imported or no Java runtime
starts (the Rust test then skips). The queries are docs/PARQUET.md's
DuckDB queries in Spark's spelling: `count_if(c)` for `count(*) FILTER
(WHERE c)`, the column list for `GROUP BY ALL`.
"""

import json
import sys

try:
    from pyspark.sql import SparkSession
except ImportError as e:  # the tests skip with a note
    print(f"pyspark not importable: {e}", file=sys.stderr)
    sys.exit(3)

DIR = sys.argv[1]
TABLES = ["runs", "samples", "intervals", "modules", "processes", "threads", "events", "functions", "stacks"]

try:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("tbrw-parquet")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
except Exception as e:  # no Java runtime: the tests skip with a note
    print(f"Spark cannot start: {e}", file=sys.stderr)
    sys.exit(3)
spark.sparkContext.setLogLevel("ERROR")

# docs/PARQUET.md, "The same in Spark": each table's files of every run
# (DIR/host=H/run=R/TABLE.parquet), host and run from the folders, as text.
spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
for t in TABLES:
    spark.read.option("basePath", DIR).parquet(f"{DIR}/host=*/run=*/{t}.parquet").createOrReplaceTempView(t)

QUERIES = {
    # Top modules across hosts and runs.
    "top_modules": """
        SELECT coalesce(m.name, '[unknown]') AS module, count(*) AS samples
        FROM samples s LEFT JOIN modules m
          ON s.host = m.host AND s.run = m.run AND s.module_id = m.module_id
        WHERE s.ip IS NOT NULL
        GROUP BY 1 ORDER BY samples DESC, module""",
    # Samples per module of each run (stream 0).
    "modules_per_run": """
        SELECT s.host, s.run, coalesce(m.name, '[unknown]') AS module, count(*) AS samples
        FROM samples s LEFT JOIN modules m
          ON s.host = m.host AND s.run = m.run AND s.module_id = m.module_id
        WHERE s.stream = 0
        GROUP BY 1, 2, 3 ORDER BY 1, 2, samples DESC, module""",
    # Samples per function of each run (the functions table, --functions).
    "functions_per_run": """
        SELECT s.host, s.run, f.name AS function, count(*) AS samples
        FROM samples s JOIN functions f
          ON s.host = f.host AND s.run = f.run AND s.function_id = f.function_id
        WHERE s.stream = 0
        GROUP BY 1, 2, 3 ORDER BY 1, 2, samples DESC, function""",
    # Samples per thread of each run, and those of the thread named crunch-A
    # (a thread's records may repeat it: one name per tid).
    "threads_per_run": """
        SELECT s.host, s.run, s.tid, count(*) AS samples,
               count_if(t.name = 'crunch-A') AS named_crunch_a
        FROM samples s LEFT JOIN (SELECT host, run, tid, max(name) AS name FROM threads GROUP BY 1, 2, 3) t
          ON s.host = t.host AND s.run = t.run AND s.tid = t.tid
        WHERE s.stream = 0
        GROUP BY 1, 2, 3 ORDER BY 1, 2, samples DESC, tid""",
    # Calls per name of each run and stream (interval streams).
    "calls_by_name": """
        SELECT host, run, stream, name, count(*) AS calls
        FROM intervals GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, calls DESC, name""",
    # The runs: host, run, samples and intervals recorded.
    "runs": """
        SELECT host, run, samples, intervals FROM runs ORDER BY host, run""",
}

answers = {name: [list(r) for r in spark.sql(q).collect()] for name, q in QUERIES.items()}
print(json.dumps(answers, default=str))
spark.stop()
