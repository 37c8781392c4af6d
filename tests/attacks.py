"""The attack registry: every attack on packages, releases, verdict files and writes, each a named test.

Issue 11 listed the attacks an attacker tried; each is registered here with where it came
from (`issue` or `added`) and whether the defence held before the hardening
(`before`: measured by running the attack tests on the commit before the fixes, where the
attacks that succeeded were marked xfail(strict=True)). A test names its attack with
`@attack(ID)`; an attack holds when every test naming it passes.

`benchmarks/attacks_report.py` runs the attack tests and prints, per attack, before and now,
and "N tried, M held"; the same line ends a pytest run that collected attack tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest


@dataclass(frozen=True)
class Attack:
    id: str
    title: str
    source: Literal["issue", "added"]
    before: Literal["held", "succeeded"]


_TABLE: list[tuple[str, str, str, str]] = [
    # id, title, source, before
    # ---- packages (issue)
    ("pkg.tar-bomb", "a 64 MiB (real: 10 GiB) member of zeros in a small .tar.gz", "issue", "succeeded"),
    ("pkg.tar-many-members", "200,000 empty members in a tarball", "issue", "succeeded"),
    ("pkg.gz-rows-bomb", "a .jsonl.gz repeating one valid row past the manifest's rows", "issue", "succeeded"),
    ("pkg.toctou-grade", "the responses file swapped between validation and grading", "issue", "succeeded"),
    ("fmt.dup-key-manifest", "a duplicate key in manifest.json", "issue", "succeeded"),
    ("fmt.dup-key-row", "a duplicate key in a data row", "issue", "succeeded"),
    ("fmt.schema-version", "schema_version 0 or -5", "issue", "succeeded"),
    ("fmt.newline-in-name", "a newline in a data file's name forging output lines", "issue", "succeeded"),
    ("fmt.huge-int", "sample = 10**30 crashing diff and release", "issue", "succeeded"),
    # ---- releases (issue)
    ("leak.upper-case", "protected text in upper case", "issue", "succeeded"),
    ("leak.nfkc", "protected text in full-width (NFKC) look-alikes", "issue", "succeeded"),
    ("leak.separators", "protected text with spaces replaced by _, - or .", "issue", "succeeded"),
    ("leak.zero-width", "a zero-width character every 10 characters", "issue", "succeeded"),
    ("leak.split-values", "protected text split across values shorter than the window", "issue", "succeeded"),
    ("leak.import-status", "protected text inside an `import verdicts` status", "issue", "succeeded"),
    ("leak.error-echo", "an error line printing the protected text it found", "issue", "succeeded"),
    ("leak.answer-inference", "ids ...-v{k} that predict the reference letter", "issue", "succeeded"),
    ("salt.weak", "weak salts (aaaaaaaaaaaaaaaa, patterns, words) accepted", "issue", "succeeded"),
    ("salt.offline-guess", "salt_check lets a guessable salt be recovered offline", "issue", "succeeded"),
    # ---- verdict files (issue)
    ("verdicts.inconsistent", "flipped verdicts under the same components reported as retractions", "issue",
     "succeeded"),
    ("verdicts.forged-sidecar", "a forged Parquet sidecar that reproduce ignores", "issue", "succeeded"),
    ("verdicts.pair-kill", "kill -9 or a full disk between writing the sidecar and the JSON", "issue", "succeeded"),
    ("verdicts.pair-concurrent", "concurrent writers leaving a broken JSON + sidecar pair", "issue", "succeeded"),
    # ---- added
    ("pkg.toctou-every-reader", "a file swapped between hash and read in validate, reproduce, diff, release, "
                                "verify-release", "added", "succeeded"),
    ("pkg.tar-manifest-last", "a bomb member before manifest.json in a tarball", "added", "succeeded"),
    ("pkg.tar-duplicate-member", "the same tar member twice (extractors disagree on which wins)", "added",
     "succeeded"),
    ("pkg.gz-blank-lines", "a .jsonl.gz decompressing to gigabytes of blank lines", "added", "succeeded"),
    ("pkg.symlink", "a symbolic link inside a package directory", "added", "held"),
    ("pkg.hardlink", "a hard link whose other name is rewritten after validation", "added", "succeeded"),
    ("pkg.fifo-swap", "a data file swapped for a FIFO after validation (the reader would wait forever)", "added",
     "succeeded"),
    ("pkg.listed-twice", "a manifest listing one file twice", "added", "held"),
    ("pkg.case-collision", "two paths equal under case folding", "added", "succeeded"),
    ("pkg.unicode-collision", "two paths equal under Unicode normalization (NFC vs NFD)", "added", "succeeded"),
    ("pkg.huge-line", "a single 80 MiB line", "added", "held"),
    ("fmt.deep-nesting", "JSON nested 100,000 deep in a manifest, row, verdict file and release.json", "added",
     "succeeded"),
    ("fmt.nan", "NaN and Infinity in a verdict file and release.json", "added", "succeeded"),
    ("fmt.bom", "a UTF-8 byte order mark before manifest.json", "added", "held"),
    ("fmt.dup-key-verdict-file", "a duplicate key in a verdict file's header or rows", "added", "succeeded"),
    ("fmt.dup-key-release-json", "a duplicate key in release.json", "added", "succeeded"),
    ("fmt.control-chars-in-errors", "a tar member name with a newline forging error lines", "added", "succeeded"),
    ("verdicts.sidecar-path", "a verdict file whose Parquet sidecar path leaves its directory", "added",
     "succeeded"),
    ("verdicts.other-package-digest", "a verdict file claiming a different package digest", "added", "held"),
    ("release.replay-new-salt", "an old release presented under a new salt", "added", "held"),
    ("release.rows-reordered", "a release whose rows are reordered to match the answer order", "added",
     "succeeded"),
    ("release.status-encodes-answer", "protected rows whose status spells the answer", "added", "succeeded"),
    # ---- added with main's new package kinds (bench, telemetry, profile, checkpoint-headers) and `audit verify`;
    # `before`: main at 11bb3c1, before harden was merged into it
    ("kinds.dup-key-trace-summary", "a duplicate key in a profile package's summary.json (trace_summary.v1)",
     "added", "succeeded"),
    ("kinds.dup-key-bench", "a duplicate key in a throughput package's summary.json or anchor.json", "added",
     "succeeded"),
    ("kinds.fifo-swap", "a telemetry Parquet file or a floor shard swapped for a FIFO after validation", "added",
     "succeeded"),
    ("kinds.toctou-floor", "another floor package swapped in after validation (floor-check reads it)", "added",
     "succeeded"),
    ("kinds.toctou-documents", "a trace summary.json swapped after validation", "added", "succeeded"),
    ("kinds.tar-bomb-floor", "a 64 MiB (real: 10 GiB) shard member in a floor bundle, manifest last or first",
     "added", "succeeded"),
    ("kinds.huge-int", "10**30 in a bench or profile row", "added", "succeeded"),
    ("kinds.toctou-claims", "a verdict file or package table swapped after `audit verify` checked its digest",
     "added", "succeeded"),
    ("kinds.dup-key-claims-table", "a duplicate key in a JSONL table `audit verify` reads", "added", "succeeded"),
    ("pkg.toctou-bundle", "a file rewritten between `audit bundle`'s validation and its tarring", "added",
     "succeeded"),
    # ---- round 3 (r3-release)
    ("release.random-guess-key", "protected random_guess rows and the published guess_seed recompute the key "
                                 "(real GPQA: 782 of 792)", "issue", "succeeded"),
    ("leak.encoded", "protected text in a public reason as base64, base32, hex, rot13, reversed or interleaved",
     "issue", "succeeded"),
    ("leak.spread-over-rows", "protected text in 19-character pieces, one per row (plain, base64, reversed)",
     "issue", "succeeded"),
    ("leak.document-strings", "protected text (plain, base64, hex) in the verdict file's benchmark name", "issue",
     "succeeded"),
    ("release.sample-encodes-answer", "a protected item's only sample index set to its gold letter's index",
     "issue", "succeeded"),
    ("release.public-text-spells-key", "a public row's text spelling the protected references in id order "
                                       "(letters, digits, dataset order under salted ids)", "issue", "succeeded"),
    ("release.order-encodes-answer", "ids whose sorted order groups the protected items by gold letter", "added",
     "succeeded"),
    ("verdicts.error-echo", "a verdict, status or sample holding protected text echoed by release, show, diff, "
                            "reproduce", "issue", "succeeded"),
    ("verdicts.bad-unicode", "lone high/low surrogates, reversed pairs, in a row field, an id or the header",
     "issue", "succeeded"),
    ("salt.file-mode", "a --salt-file readable by group or others (0644, 0640, 0604)", "issue", "succeeded"),
    ("salt.reuse-links", "one salt reused: two releases with identical hashed ids", "issue", "succeeded"),
    # ---- round 3 (import)
    ("import.superscript-crash", "`import verdicts` sample \"²\" crashing with a traceback", "issue", "succeeded"),
    ("import.unicode-digits", "non-ASCII digits (\"٣\", \"３\") read as numbers by an importer", "issue",
     "succeeded"),
    ("import.package-path", "`import verdicts --package P` recording P relative to the working folder", "issue",
     "succeeded"),
    # ---- round 3 (floor)
    ("floor.config-huge-layers", "a floor config with 10^12 layers", "issue", "succeeded"),
    ("floor.config-huge-hidden", "a floor config with hidden_size 10^400", "issue", "succeeded"),
    ("floor.config-numbers", "config numbers negative, zero, bool, float for int, huge, nested, huge lists",
     "added", "succeeded"),
    ("floor.options-huge", "--context or --gpus 10^400, --hbm-tbps 1e-300", "added", "succeeded"),
    ("floor.synth-huge", "make_header_only_checkpoint on a config with 10^12 layers or hidden_size 10^400",
     "added", "succeeded"),
    ("floor.header-offsets", "safetensors offsets or dims past 2^64, a shape product overflow, a header not "
                             "starting with '{', non-ASCII digits", "issue", "succeeded"),
    # ---- round 3 (r3-writes)
    ("writes.force-user-folder", "`audit pack DIR --force` over a folder holding a paper draft deletes it", "issue",
     "succeeded"),
    ("writes.force-every-writer", "--force of every writer (import, release, bench, floor, trace, generate, grade, "
                                  "claims page, extract, judge) replacing a file or folder audit did not write",
     "issue", "succeeded"),
    ("writes.force-package-plus-file", "--force over a package folder that also holds a user's file", "added",
     "succeeded"),
    ("writes.force-symlink", "--force over a symlink to a user's folder or file", "added", "succeeded"),
    ("writes.force-json-name", "--force over a file that merely has a .json name", "added", "succeeded"),
    ("writes.force-parent-of-input", "--force naming the folder that holds the input as the output", "added",
     "succeeded"),
    ("writes.race-no-force", "two `audit grade -o SAME.json` started together both exit 0, one result replaced",
     "issue", "succeeded"),
    ("writes.race-every-writer", "two writers without --force racing for one package or file name", "added",
     "succeeded"),
    ("id.manifest-relabel", "provenance.model and sampling relabelled in a manifest: same digest, reproduce "
                            "says identical", "issue", "succeeded"),
    ("id.manifest-other-fields", "kind, benchmark, package_id, producer or a file's rows relabelled under the "
                                 "same digest", "added", "succeeded"),
    ("pkg.tar-trailing-archive", "a second archive after the first in the same gzip stream", "issue", "succeeded"),
    ("pkg.tar-trailing-data", "a second gzip member or garbage after a tarball's end", "added", "succeeded"),
    ("reproduce.recorded-fields-copied", "reproduce copies producer and environment from the file it checks",
     "issue", "succeeded"),
    ("claims.zero-tolerance-slack", "tolerance {absolute: 0} lets 10,000,000,007 recompute as 10,000,000,000",
     "issue", "succeeded"),
    ("claims.arithmetic-crash", "claims arithmetic max(5), abs(1, 2), huge numbers crashing with a traceback",
     "issue", "succeeded"),
    # ---- round 3 (r3-bounds)
    ("pkg.gz-long-line", "a .jsonl.gz of one 48 GiB line (8 GiB here; uncompressed_bytes null), or a one-member "
                         "gzip of a newline-free run", "issue", "succeeded"),
    ("pkg.gz-ratio", "a .jsonl.gz of valid rows expanding past 200x its size (manifest rows 10**9)", "added",
     "succeeded"),
    ("pkg.gz-input", "a .jsonl.gz input (import, judge) of endless blank lines, rows or one line", "added",
     "succeeded"),
    ("pkg.parquet-huge-value", "a 14 KiB Parquet file holding one 400 MiB value (80 MiB here), or one 1 MiB "
                               "value repeated 2,000 times through a dictionary in 800 bytes", "issue", "succeeded"),
    ("pkg.parquet-shape", "a Parquet data file of 100,000 row groups, 5,000 columns or nesting 200 deep", "added",
     "succeeded"),
    ("gen.endless-stream", "an endless token stream, and an endless stream of empty chunks", "issue", "succeeded"),
    ("gen.drip", "a stream sent one byte at a time despite --request-timeout", "issue", "succeeded"),
    ("gen.huge-line", "one 800 MiB SSE line (64 MiB here)", "issue", "succeeded"),
    ("gen.huge-reply", "a stream of many small events, or a /v1/models reply, past the byte limit", "added",
     "succeeded"),
    ("gen.lying-usage", "usage.completion_tokens fewer than the chunks of text the stream carried", "added",
     "succeeded"),
    ("gen.at-budget", "a reply using exactly max_tokens that says stop, credited like any other", "issue",
     "succeeded"),
    ("gen.huge-log", "a server log grown by gigabytes between polls, or one 50 KB (real: GB) log line", "added",
     "succeeded"),
    ("fmt.unicode-digits-generate", "non-ASCII digits in generate's numeric options, launch --port, "
                                    "generation_config.json, CUDA_VISIBLE_DEVICES, SOURCE_DATE_EPOCH", "issue",
     "succeeded"),
    # ---- round 3 (trace)
    ("trace.gzip-whitespace-bomb", "a small .json.gz trace that expands to gigabytes of blank space", "issue",
     "succeeded"),
    ("trace.plain-whitespace-cap", "a plain .json trace of more blank space than the JSON-text limit", "added",
     "succeeded"),
    ("trace.numeric-ts", 'a trace event whose ts is "Infinity", 1e999999999 or 10**300', "issue", "succeeded"),
    ("trace.numeric-class", "dur, ts, correlation, stream, device, pid/tid: NaN, negative, bool, strings, "
     "thousands of digits, out-of-range ids", "added", "succeeded"),
    ("trace.dup-key-event", 'a trace event naming "dur" twice', "issue", "succeeded"),
    ("trace.dup-key-class", "a key twice in an event's args, with blank space before its colon, in a metadata "
     "value, at the top level", "added", "succeeded"),
    # ---- round 3 (verdicts)
    ("diff.invisible-ids", "ids, answers and subjects differing only by an invisible character (zero-width, bidi, "
                           "control, no-break space, lone combining mark) printed alike by diff, grade and show",
     "issue", "succeeded"),
    # ---- round 3 (gpu)
    ("bench.claimed-tokens", "a stream chunk claiming usage.completion_tokens = 10**9 (8 GB of token times)",
     "issue", "succeeded"),
    ("bench.endless-warmup", "an endless stream answering the warm-up request (no cut time: the run hangs)", "issue",
     "succeeded"),
    ("bench.endless-timed", "an endless stream answering a timed request", "added", "held"),
    ("bench.tokenize-claims", "/tokenize counts that fall as the prompt grows (a prompt of 10**11 words) or are 0",
     "added", "succeeded"),
    ("bench.metrics-bloat", "a /metrics page of unbounded size", "added", "succeeded"),
    ("bench.metrics-positions", "10,000 per-position spec-decode counters in /metrics", "added", "succeeded"),
    ("bench.counters-inconsistent", "spec-decode counters that go down or accept more than was drafted", "added",
     "succeeded"),
    ("bench.server-strings", "a megabyte /version string recorded in the package", "added", "succeeded"),
    ("bench.anchor-log-flood", "an anchor command printing without end (its log fills the disk)", "added",
     "succeeded"),
    # ---- round 3 (bounds2)
    ("verdicts.sidecar-dictionary-bomb", "a verdict file's Parquet sidecar repeating one 8 MiB value through a "
                                         "dictionary in 120 rows (960 MiB decoded from a few KB)", "added",
     "succeeded"),
    ("verdicts.sidecar-huge-value", "a verdict file's Parquet sidecar holding one 80 MiB value in a few KB", "added",
     "succeeded"),
    ("import.zip-bomb", "a zip input (import table, verdicts, mmlu-pro) whose member, or members together, expand "
                        "past 200 times the archive", "added", "succeeded"),
    ("import.zip-members", "a zip input listing more members than any tool writes", "added", "succeeded"),
    ("import.zip-member-path", "a zip input member named ../x.jsonl, /etc/x.jsonl or with control characters",
     "added", "succeeded"),
    ("import.zip-unreadable-member", "a zip input whose member is encrypted, or of compression method 99 "
                                     "(a NotImplementedError traceback)", "added", "succeeded"),
    ("import.eval-zip-bomb", "an inspect_ai .eval log whose sample member expands past 200 times the log", "added",
     "succeeded"),
    ("import.parquet-bomb", "a Parquet input (import table, lm-eval details) repeating a 1 MiB value through a "
                            "dictionary 2,000 times, or holding one 80 MiB value", "added", "succeeded"),
    ("import.csv-gz-bomb", "a .csv.gz input of endless blank lines (pandas' own gzip reader, unbounded)", "added",
     "succeeded"),
    ("import.csv-long-cell", "a CSV input with one 100 MiB cell: imported into a package whose line no reader "
                             "accepts (4 MiB past a 1 MiB limit here)", "added", "succeeded"),
    ("salt.file-huge", "a --salt-file of 8 GiB (read whole), or of bytes that are not UTF-8", "added", "succeeded"),
    ("gen.config-huge", "a model's generation_config.json of 8 GiB (read whole), or naming a key twice", "added",
     "succeeded"),
    ("show.deep-json-sniff", "`audit show` or a failed import of a .json nested 200,000 deep (its format "
                             "guessed: a RecursionError traceback)", "added", "succeeded"),
    ("claims.page-huge-own-file", "an 8 GiB index.html in `audit claims page`'s folder (read whole to look for "
                                  "the page's footer)", "added", "succeeded"),
    ("gen.huge-log-at-stop", "a launched server's log grown by 1 GiB as it stops (read whole for its defaults line)",
     "added", "succeeded"),
    ("import.lighteval-literal", "a lighteval text-layout cell that is code, a 5,000-deep nest or 16 MiB (read as a "
                                 "Python literal)", "added", "held"),
    ("trace.split-swap", "a trace replaced between the two opens of a split read (parent and forked child)",
     "added", "succeeded"),
    ("trace.scan-escaped-duplicate", "a key named twice, the second time written with a \\u escape (\"t\\u0073\"): "
                                     "equal only once decoded", "added", "held"),
    ("trace.scan-odd-everywhere", "every event one the compiled pass leaves to the exact reader (times with "
                                  "exponents): a refill per event grew the buffer by a chunk each time", "added",
     "succeeded"),
    ("import.parquet-swap", "a Parquet details table replaced between its hash and datasets reading it", "added",
     "succeeded"),
    ("bench.huge-server-log", "a launched server that writes gigabytes of log: copied whole into the package",
     "added", "succeeded"),
    ("import.jsonl-swap", "a JSON / JSONL source (mmlu-pro, lm-eval, table, verdicts) replaced between its hash and "
                          "the read of its records", "added", "succeeded"),
    ("import.csv-swap", "a CSV / .csv.gz source (table, verdicts) replaced between its hash and pandas reading it",
     "added", "succeeded"),
    ("import.zip-swap", "an MMLU-Pro zip replaced between its hash and the read of its members", "added",
     "succeeded"),
    ("import.table-parquet-swap", "a Parquet table given to import table / mmlu-pro replaced between its hash and "
                                  "its read", "added", "succeeded"),
    ("import.recorded-swap", "a source replaced between two reads of one import (the --recorded verdicts, the "
                             "responses table, the items table)", "added", "succeeded"),
    ("import.inspect-swap", "an inspect_ai log replaced between its hash and inspect_ai reading it", "added",
     "succeeded"),
    ("import.results-swap", "an lm-eval results file replaced after the cross-check read it (hashed later), or "
                            "between the read of the samples it holds and their hash", "added", "succeeded"),
    ("verdicts.file-huge", "a verdict file, or the Parquet rows file it names, of 8 GiB (sparse) read whole",
     "added", "succeeded"),
    ("release.json-huge", "a release.json padded past 64 MiB (re-pinned) read whole and parsed by verify-release",
     "added", "succeeded"),
    ("gen.run-json-fifo", "OUT.work/run.json a FIFO (generate --force, or a resume, waited for ever) or 8 GiB "
                          "(read whole)", "added", "succeeded"),
    ("release.rows-huge", "a release whose rows file holds gigabytes of valid rows: every row held in memory by "
                          "verify-release and audit show", "added", "succeeded"),
    # ---- round 4 (hard), issue 28 by class
    ("names.lm-eval-task-path", "import lm-eval DIR: an embedded task name ../../x, /abs, '..', hidden or 300 "
                                "characters becomes a package path", "issue", "succeeded"),
    ("names.lm-eval-task-nul", "an embedded task name holding NUL, a newline or an invisible character", "issue",
     "succeeded"),
    ("names.lm-eval-force-outside", "--force replacing a user's package outside -o through a task name ../victim",
     "issue", "succeeded"),
    ("bounds.eval-member-declared-small", "an inspect .eval member (deflate or zstd) declaring 6,000 bytes that "
                                          "expands to 2 GiB", "issue", "succeeded"),
    ("bounds.inspect-json-huge", "an inspect .json log of any size read whole (400 MB at 971 MB)", "issue",
     "succeeded"),
    ("bounds.map-format-width", "--map format widths and precisions ({qid:>1500000000}, {n:.900000000f}) "
                                "building gigabytes", "issue", "succeeded"),
    ("bounds.uneven-samples-cost", "one item with 200,000 samples: a figure per sample index (10x the time and "
                                   "memory of the same rows over items)", "issue", "succeeded"),
    ("claims.md-ledger-html", "claims.md carries a ledger's <script>, <img onerror> and javascript: links raw",
     "issue", "succeeded"),
    ("output.lookalike-key", "a look-alike policy key (Cyrillic а) printed unescaped", "issue", "succeeded"),
    ("output.long-argument-echo", "a 100,000-character argument echoed whole in an error line", "issue",
     "succeeded"),
    ("bench.no-token-stream", "bench throughput on a stream that never sends a token but never goes silent "
                              "(comment lines, empty deltas with 0 completion tokens) hangs", "issue", "succeeded"),
    ("verdicts.self-contradicting-row", "import verdicts accepts `verdict: correct` with `status: no_answer` and "
                                        "no answer", "issue", "succeeded"),
    ("import.eval-duplicate-member", "an inspect .eval holding one member name twice, read silently", "issue",
     "succeeded"),
    ("writes.killed-partial-left", "kill -9 during release (a package write) leaves hidden .NAME.partial-* "
                                   "folders behind for good", "issue", "succeeded"),
    ("kinds.responses-relabelled-items", "a responses package relabelled `kind: items` validates", "issue",
     "succeeded"),
    # ---- round 4 (rel), issue 28 class 5: the release made structural
    ("release.public-text-encoded", "protected text in a public reason as base85, ascii85, Caesar shifts, every 4th "
                                    "character, zlib, reversed words, homoglyphs, percent-encoding, base64 of the "
                                    "reversed text, base32 of rot13 or decimal code points", "issue", "succeeded"),
    ("release.public-text-pieces", "protected text in pieces over public rows in reverse order, or over two fields "
                                   "(alternate pieces in answer and reason)", "issue", "succeeded"),
    ("release.public-text-planted", "free text planted in a public row of a release after it was written (re-pinned): "
                                    "passes verify-release", "issue", "succeeded"),
    ("release.short-key", "the references of fewer than 20 protected items spelled in one public reason (in order "
                          "or reversed)", "issue", "succeeded"),
    ("release.neighbour-status-key", "each protected item's key carried by the status of the next item in published "
                                     "order", "issue", "succeeded"),
    ("release.public-neighbour-key", "each protected item's key carried by the answer of the public item published "
                                     "next to it", "added", "succeeded"),
    ("release.attempt-code-points", "public rows' attempt numbers (a bounded integer, no text field) spelling the "
                                    "protected question as code points over the rows", "added", "succeeded"),
    ("release.header-names", "the verdict file's names for its extractor, grader and packages (base32 of protected "
                             "text, lowercase) copied into release.json", "added", "succeeded"),
    ("release.sample-modulo-key", "each protected item's key carried by its sample index modulo 4", "issue",
     "succeeded"),
    ("release.hf-parquet-planted", "a dataset folder's Parquet (the file `datasets` loads) carrying rows or columns "
                                   "the release does not: verify-release read only the JSON", "issue", "succeeded"),
    ("id.manifest-downgrade", "a manifest edited to schema_version 1 (whose digest leaves provenance out) though its "
                              "producer writes 2 or later: provenance unpinned again", "issue", "succeeded"),
    ("id.legacy-provenance-read", "a schema_version 1 manifest's provenance, which its digest does not cover, read as "
                                  "the package's (a profile's trace, a telemetry link, `audit show`)", "added",
     "succeeded"),
    ("import.lm-eval-task-twice", "import lm-eval DIR: a task both in a samples file and embedded in the results file "
                                  "(or in .jsonl and .parquet samples, or two results files of one run): one copy "
                                  "read silently", "issue", "succeeded"),
    # ---- round 4 (trace, issue 28 classes 3, 4, 8)
    ("trace.fifo", "`audit trace` on a FIFO, or a link to one: the two-process reader opened it before checking "
                   "(waited for ever on 2+ CPUs)", "issue", "succeeded"),
    ("trace.rewritten-in-place", "a trace rewritten in place while it is read: a package pinned to old first bytes "
                                 "and new last bytes, which no file ever held", "issue", "succeeded"),
    ("trace.ambiguous-events", "trace events with a correlation id launched twice, a list (or object, or bool) as "
                               "pid, tid or args, or ph 7: read silently", "issue", "succeeded"),
]

ATTACKS: dict[str, Attack] = {}
for _id, _title, _source, _before in _TABLE:
    assert _id not in ATTACKS, _id
    ATTACKS[_id] = Attack(_id, _title, _source, _before)  # type: ignore[arg-type]


def attack(attack_id: str):
    """Mark a test as (one of) the test(s) of a registered attack."""
    if attack_id not in ATTACKS:
        raise KeyError(f"unregistered attack {attack_id!r}: add it to tests/attacks.py")
    return pytest.mark.attack(attack_id)


# --------------------------------------------------------------------------- pytest plugin (see conftest.py)

_outcomes: dict[str, list[bool]] = {}


def pytest_runtest_logreport(report):
    ids = [k[len("attack:"):] for k in report.keywords if isinstance(k, str) and k.startswith("attack:")]
    for attack_id in ids:
        if report.when == "call":  # an xfail counts as not held
            _outcomes.setdefault(attack_id, []).append(report.passed)
        elif report.failed:  # setup or teardown error
            _outcomes.setdefault(attack_id, []).append(False)


def pytest_collection_modifyitems(items):
    for item in items:
        for m in item.iter_markers("attack"):
            item.keywords[f"attack:{m.args[0]}"] = True


def summary_line(outcomes: dict[str, list[bool]]) -> str:
    tried = [a for a in ATTACKS if a in outcomes]
    held = [a for a in tried if all(outcomes[a])]
    before = sum(ATTACKS[a].before == "held" for a in tried)
    return (f"attacks: {len(tried)} tried, {before} held before the hardening, {len(held)} held now"
            + ("" if len(held) == len(tried) else
               f" (succeeding: {', '.join(a for a in tried if a not in held)})"))


def pytest_terminal_summary(terminalreporter):
    if _outcomes:
        terminalreporter.write_line(summary_line(_outcomes))


broken = pytest.mark.xfail(strict=True, reason="issue 11: the attack succeeds before its fix")
"""On an attack test while its defence is missing: the test must fail (strict), so a fix shows."""

racy = pytest.mark.xfail(strict=False, reason="issue 11: the attack succeeds before its fix when the race is hit")
"""On an attack test that races a thread: before the fix it fails only when the race is hit."""
