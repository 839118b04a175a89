"""Run one SQL statement with DuckDB over wshard catalogs in place on an S3-compatible store.

`wshard query` (cli/src/verbs/query.rs) runs this file with `python3 -c` (it is embedded in
the binary) and passes the catalog URLs it resolved: nothing is downloaded by us, DuckDB's
httpfs reads the Parquet files with range requests. Contract (docs/PUBLISH.md, "Querying"):

    python3 -c SCRIPT --endpoint HOST:PORT --ssl 0|1 --region R --format table|json|csv
                      --sql SQL URL [URL ...]

Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN in the
environment and are never printed: every message is scrubbed of them.

Needs PyPI `duckdb==1.5.5` and `duckdb-extension-httpfs==1.5.5` (which ships the httpfs
extension file, loaded by path: no download at run time).

Exit codes: 0 ok, 1 the query failed (DuckDB's message), 2 setup (duckdb or httpfs missing).
"""

import csv
import json
import os
import sys

EXIT_FAILED = 1
EXIT_SETUP = 2
INSTALL_HINT = (
    "install them into this interpreter: python3 -m pip install duckdb==1.5.5 "
    "duckdb-extension-httpfs==1.5.5 (or point $WSHARD_PYTHON at a python that has them)"
)
SECRETS = [
    os.environ.get(k, "")
    for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
]


def scrub(text):
    for s in SECRETS:
        if s:
            text = text.replace(s, "***")
    return text


def fail(code, message):
    print("wshard query: " + scrub(message), file=sys.stderr)
    sys.exit(code)


def parse_args(argv):
    opts = {}
    urls = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if i + 1 >= len(argv):
                fail(EXIT_SETUP, "missing value after " + a)
            opts[a[2:]] = argv[i + 1]
            i += 2
        else:
            urls.append(a)
            i += 1
    return opts, urls


def httpfs_path(duckdb):
    try:
        import duckdb_extension_httpfs
    except ImportError as e:
        fail(EXIT_SETUP, "the httpfs extension package is missing (%s); %s" % (e, INSTALL_HINT))
    base = os.path.dirname(duckdb_extension_httpfs.__file__)
    path = os.path.join(
        base, "extensions", "v" + duckdb.__version__, "httpfs.duckdb_extension"
    )
    if not os.path.isfile(path):
        fail(
            EXIT_SETUP,
            "no httpfs extension for duckdb %s at %s; %s" % (duckdb.__version__, path, INSTALL_HINT),
        )
    return path


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def connect(duckdb, opts, urls):
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute("LOAD " + sql_str(httpfs_path(duckdb)))
    key_id = os.environ.get("AWS_ACCESS_KEY_ID", "")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not key_id or not secret:
        fail(EXIT_SETUP, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
    parts = [
        "TYPE s3",
        "KEY_ID " + sql_str(key_id),
        "SECRET " + sql_str(secret),
        "ENDPOINT " + sql_str(opts["endpoint"]),
        "URL_STYLE 'path'",
        "USE_SSL " + ("true" if opts.get("ssl") == "1" else "false"),
        "REGION " + sql_str(opts.get("region", "us-east-1")),
    ]
    token = os.environ.get("AWS_SESSION_TOKEN", "")
    if token:
        parts.append("SESSION_TOKEN " + sql_str(token))
    con.execute("CREATE SECRET wshard_store (" + ", ".join(parts) + ")")
    files = "[" + ", ".join(sql_str(u) for u in urls) + "]"
    # The version is the catalog's key (catalog/<version>.parquet), not a column of it.
    con.execute(
        "CREATE VIEW catalog AS SELECT dataset, "
        "regexp_extract(filename, '([0-9a-f]{64})\\.parquet$', 1) AS version, "
        "* EXCLUDE (dataset, filename) FROM read_parquet(" + files + ", filename = true)"
    )
    return con


def cell(v):
    if v is None:
        return ""
    if isinstance(v, list):
        return "[" + ", ".join(cell(x) for x in v) + "]"
    return str(v)


def write(fmt, names, rows):
    out = sys.stdout
    if fmt == "json":
        for r in rows:
            out.write(json.dumps(dict(zip(names, r)), default=str, sort_keys=False) + "\n")
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow([cell(v) for v in r])
    else:
        text = [[cell(v) for v in r] for r in rows]
        widths = [len(n) for n in names]
        for r in text:
            widths = [max(w, len(c)) for w, c in zip(widths, r)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        out.write(line(names) + "\n")
        out.write(line(["-" * w for w in widths]) + "\n")
        for r in text:
            out.write(line(r) + "\n")
        out.write("(%d rows)\n" % len(rows))


def main(argv):
    opts, urls = parse_args(argv)
    try:
        import duckdb
    except ImportError as e:
        fail(EXIT_SETUP, "python package duckdb is missing (%s); %s" % (e, INSTALL_HINT))
    if not urls or "sql" not in opts or "endpoint" not in opts:
        fail(EXIT_SETUP, "usage: --endpoint HOST:PORT --sql SQL URL...")
    try:
        con = connect(duckdb, opts, urls)
    except duckdb.Error as e:
        fail(EXIT_FAILED, "opening the catalog: %s" % e)
    try:
        cur = con.execute(opts["sql"])
        names = [d[0] for d in (cur.description or [])]
        rows = cur.fetchall() if names else []
    except duckdb.Error as e:
        fail(EXIT_FAILED, "SQL error: %s" % e)
    write(opts.get("format", "table"), names, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
