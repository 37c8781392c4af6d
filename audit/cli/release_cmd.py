"""`audit release` and `audit verify-release`: publish per-item verdicts without protected text, and check one."""

from __future__ import annotations

from pathlib import Path

import click

from audit.cli.app import cli
from audit.errors import AuditError


def _read_salt(salt: str | None, salt_file: Path | None) -> str | None:
    if salt is not None and salt_file is not None:
        raise click.UsageError("give --salt or --salt-file, not both")
    if salt_file is not None:
        import os
        import stat

        if not salt_file.is_file():
            raise AuditError("no such file", path=str(salt_file))
        mode = stat.S_IMODE(os.stat(salt_file).st_mode)
        for bits, what in ((0o044, "readable"), (0o022, "writable")):  # a shared secret: its owner's alone
            if mode & bits:
                raise AuditError(f"the salt file is {what} by group or others (mode {mode:04o}): run chmod 600 "
                                 f"{salt_file}", path=str(salt_file))
        from audit.fileio import document_bytes

        data = document_bytes(salt_file, MAX_SALT_FILE_BYTES, what="a salt file")  # not a file of any size
        try:
            return data.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise AuditError(f"not valid UTF-8 at byte {e.start}", path=str(salt_file)) from None
    return salt


MAX_SALT_FILE_BYTES = 4096
"""Largest --salt-file read: a salt is a line of 64 hex digits (audit writes 32 random bytes so)."""


def _new_salt_file(path: Path, force: bool) -> tuple[str, Path]:
    """A generated salt, written to a hidden temporary file beside `path` (mode 0600) until the release
    is written; `_keep_salt` then moves it into place."""
    import os
    import uuid

    from audit.outputs import check_output
    from audit.release import generate_salt

    check_output(path, force=force, kind="salt")
    salt = generate_salt()
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(salt + "\n")
        f.flush()
        os.fsync(f.fileno())
    return salt, tmp


@cli.command("release")
@click.argument("verdicts", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, metavar="DIR",
              help="Release package directory to write.")
@click.option("--items", type=click.Path(path_type=Path), metavar="ITEMS_PACKAGE",
              help="Items package (which items are protected, and their text for the leak check); "
                   "default: the one the verdict file names.")
@click.option("--responses", type=click.Path(path_type=Path), metavar="RESPONSES_PACKAGE",
              help="Responses package (for the leak check); default: the one the verdict file names.")
@click.option("--protected", "all_protected", is_flag=True, help="Treat every item as protected.")
@click.option("--public", is_flag=True, help="Treat every item as public (only for datasets that may be published).")
@click.option("--hash-ids", is_flag=True, help="Publish HMAC-SHA256(salt, id) instead of the dataset's ids.")
@click.option("--salt", metavar="S", help="Your own secret salt for --hash-ids (32+ characters, 112+ bits estimated); "
                                          "by default one is generated.")
@click.option("--salt-file", type=click.Path(path_type=Path), metavar="FILE",
              help="Read the salt from FILE; if FILE does not exist, write the generated salt there "
                   "(default: DIR.salt beside the release).")
@click.option("--no-response-check", is_flag=True,
              help="Release protected items without the responses package (recorded in release.json).")
@click.option("--public-text", is_flag=True,
              help="In a release holding protected items, also publish public items' imported answer, rule and "
                   "reason (200 characters each at most) in public_text.jsonl, through the leak check; by default "
                   "they are withheld and every published value is closed vocabulary.")
@click.option("--id", "package_id", metavar="ID", help="Package id (default: derived from the content).")
@click.option("--force", is_flag=True, help="Replace DIR if it exists.")
@click.option("--format", "fmt", type=click.Choice(["audit", "hf"]), default="audit", show_default=True,
              help="hf: a Hugging Face dataset folder (data/verdicts.parquet and a dataset card, the release "
                   "package in DIR/release), loaded by datasets.load_dataset(DIR).")
def release(verdicts: Path, out: Path, items: Path | None, responses: Path | None, all_protected: bool, public: bool,
            hash_ids: bool, salt: str | None, salt_file: Path | None, no_response_check: bool, public_text: bool,
            package_id: str | None, force: bool, fmt: str) -> int:
    """Write a release package of the verdict file VERDICTS: per-item verdicts, release.json, README.md.

    Protected items (GPQA, HLE) keep only verdict and status. In a release holding any protected item
    every published value is closed vocabulary (release_row.v2: verdicts, audit's statuses, sample
    ranks from the pinned responses package, option letters, the pinned references): the verdict
    file's free text (reasons, rules, other answers) is withheld unless --public-text. A leak check runs on every file
    first: if any protected string of 20+ letters and digits (in any case, look-alike or spacing),
    or a protected reference beside its item's id, would be published, nothing is written and
    each leak is reported (exit 2); the check also decodes and reverses text and joins rows
    (leakcheck@2, recorded in release.json). So is a release whose ids, sample indices, row order,
    verdicts, statuses or random guesses predict the protected references. --hash-ids salts the ids
    with a generated secret, written to DIR.salt (mode 0600), keyed per release so a reused salt does
    not link releases; a --salt-file others can read is refused.
    """
    from audit.outputs import publish
    from audit.release import build_release

    if (salt is not None or salt_file is not None) and not hash_ids:
        raise click.UsageError("--salt and --salt-file are only used with --hash-ids")
    new_salt: tuple[Path, Path] | None = None  # (temporary file, final file) of a generated salt
    if hash_ids and salt is None and (salt_file is None or not salt_file.exists()):
        target = salt_file if salt_file is not None else out.with_name(out.name + ".salt")
        salt, tmp = _new_salt_file(target, force)
        new_salt = (tmp, target)
    else:
        salt = _read_salt(salt, salt_file)
    try:
        if fmt == "hf":
            from audit.release.hf import build_hf_release as build_release  # the same release, as a dataset folder
        res = build_release(verdicts, out, items=items, responses=responses, all_protected=all_protected,
                            public=public, hash_ids=hash_ids, salt=salt, no_response_check=no_response_check,
                            package_id=package_id, overwrite=force, public_text=public_text)
        if new_salt is not None:
            publish(*new_salt, force=force, kind="salt")
    finally:
        if new_salt is not None and new_salt[0].exists():
            new_salt[0].unlink()
    info = res.info
    click.echo(f"wrote {out}: release package {res.package_id}, {info.rows:,} rows, {info.items:,} items "
               f"({info.protected_items:,} protected); leak check passed "
               f"({info.leak_check.protected_texts:,} protected strings)")
    if new_salt is not None:
        click.echo(f"salt written to {new_salt[1]} (mode 0600): share it privately with dataset holders; it is not "
                   f"in the release")
    return 0


@cli.command("verify-release")
@click.argument("release_dir", type=click.Path(path_type=Path))
@click.option("--items", type=click.Path(path_type=Path), required=True, metavar="PRIVATE_ITEMS",
              help="Your own items package of the dataset.")
@click.option("--salt", metavar="S", help="The salt the publisher shared, for releases with salted ids.")
@click.option("--salt-file", type=click.Path(path_type=Path), metavar="FILE", help="Read the salt from FILE.")
@click.option("--responses", type=click.Path(path_type=Path), metavar="RESPONSES_PACKAGE",
              help="Also check that no text of these responses is in the release.")
def verify_release_cmd(release_dir: Path, items: Path, salt: str | None, salt_file: Path | None,
                       responses: Path | None) -> int:
    """Check a release against your own copy of the items. Exit 0 when every check passes, 1 otherwise.

    \b
    Checks, in order:
    package        the manifest, every file's sha256 and size, and every row's schema are valid
                   (a protected row can hold nothing but item_id, sample, verdict and status)
    counts         rows, items, samples and statuses equal release.json's
    order          rows are sorted by item id then sample (an order of their own can follow the answers)
    ids            every item id of the release is one of yours (salted ids: under the salt you give)
    items package  whether your copy has the digest the release names (informational)
    protected      every item your copy marks protected is published as protected
    structure      a release holding protected items publishes closed vocabulary only (release_row.v2,
                   samples ranked 0..k-1, option letters); a version-1 release is flagged
    references     every published reference equals your copy's
    verdicts       verdicts agree with statuses, and with answer = reference for letters
    figures        figures recomputed from the rows equal release.json's
    readme         README.md is exactly what release.json generates
    parquet        (a dataset folder only) data/verdicts.parquet holds exactly the release's rows,
                   columns and metadata, and the card is the release's
    leaks          the leak check with your copy's questions, options, references (and --responses)
    inference      no published feature (id token, sample indices and their remainders, row order,
                   verdicts, statuses, neighbours' statuses, random guesses) predicts your references
                   far above chance (audit.inference)
    """
    from audit.release import verify_release

    checks = verify_release(release_dir, items, salt=_read_salt(salt, salt_file), responses=responses)
    for c in checks:
        click.echo(f"{'ok  ' if c.ok else 'FAIL'} {c.name:<14} {c.detail}")
    failed = [c for c in checks if not c.ok]
    click.echo(f"{'verified' if not failed else 'NOT verified'}: {len(checks) - len(failed)} of {len(checks)} "
               f"checks passed", err=bool(failed))
    return 1 if failed else 0
