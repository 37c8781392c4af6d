"""Every committed evidence package says what it measured (issue 32): the current manifest version (whose schema
describes the subject), a subject naming the model by its public name and its config's digest, the engine, the
hardware, the weights and the run; and its figures are the ones it had before it was rewritten
(scripts/rewrite_evidence.py touches manifests and a telemetry package's link only)."""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from audit.bench import store
from audit.models import MANIFEST_SCHEMA_VERSION
from audit.packages import open_package, validate_package

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "packages"

KEPT = {
    # the tiny random Llama of ../shared/device/make-tiny-llama.py has no public name (its files are pinned in
    # provenance.extra), and the verdict files of evidence-h200-vllm/graded pin these three by their old digest
    "evidence-h200-vllm/math500-tiny-llama", "evidence-h200-vllm/mmlu_pro-tiny-llama",
    "evidence-h200-vllm/math500-completion-resumed",
}

# Read from the packages before the rewrite (schema_version 1): tok/s mean over the valid windows.
TOK_S = {
    "evidence-h200-bench/graphs": 203.95555555555555, "evidence-h200-bench/eager": 58.15555555555556,
    "evidence-h200-bench/ngram": 481.8, "evidence-h200-moe/base": 180.6, "evidence-h200-moe/mtp": 76.8,
    "evidence-h100-moe/moe": 213.26666666666668, "evidence-h100-mtp/base": 150.0,
    "evidence-h100-mtp/mtp": 109.0,  # the H100 packages: as the run wrote them (v2 from the start)
}
# kernels per selected step (median, min, max) and kernels in the whole trace
KERNELS = {
    "evidence-h200-moe/profile-decode-tp1": ((1596.0, 1596, 1596), 26010),
    "evidence-h200-trace/profile-decode-tp1": ((436.0, 436, 437), 13958),
    "evidence-h200-trace/profile-default-marker": (None, 13958),
    "evidence-h100-moe/profile-decode": ((930.0, 930, 930), 29810),
    "evidence-h100-moe/profile-all-steps": ((930.0, 0, 980), 29810),
}
FLOOR_TOK_S = {
    "evidence-h200-floor/floor-llama-3.1-8b.tar.gz": 318.9602342851932,
    "evidence-h200-floor/floor-qwen3-30b-a3b.tar.gz": 783.239765421338,
    "evidence-h200-floor/floor-qwen3-30b-a3b-fp8-experts.tar.gz": 1110.5258066984886,
    "evidence-h200-floor/floor-deepseek-v3.tar.gz": 127.65478251837284,
    "evidence-h200-floor/floor-deepseek-v3-bf16-attention.tar.gz": 98.00290983965239,
    "evidence-h200-moe/floor-qwen3-next-80b-a3b-fp8.tar.gz": 1207.2725625689595,
    "evidence-h100-floor/floor-qwen3-30b-a3b-fp8.tar.gz": 977.5212658463699,
    "evidence-h100-floor/floor-mimo-7b.tar.gz": 237.8028476922791,
    "evidence-h100-floor/floor-mimo-7b-with-mtp.tar.gz": 237.75863491428998,
}


# Read from the packages before their rewrite at manifest version 3 (they were at 2, the tiny-Llama ones at 1), per
# package: sha256 over every listed file's path and sha256 (a telemetry summary.json without throughput_digest, its
# link to the throughput package, whose digest the rewrite changes), and sha256 of the manifest without `created`,
# schema_version and that link. Every figure lives in a listed file: equal digests are every figure unchanged, and
# the manifest's rows, schemas, provenance and subject unchanged too.
BEFORE = {
    "evidence-h100-moe/math500-qwen3-30b-a3b-fp8": (
        "edee5b6e4515b162df7a81c2ea8fe00791222d899b92e678924c09c17004a893",
        "fd20b441586d7f2c3bb2159bda9b8212c39350345e9fbf84afe933b85bf4e73c"),
    "evidence-h100-moe/moe": (
        "c106bd7e1f9a4e66ffa303a1d5a43d1b79c81af30690bf16f0db62e2c48ffd25",
        "cbab6cf942b317d6d1e640ba12b6c5a811d5b51030c8be2f27c30a1bf41cbf5d"),
    "evidence-h100-moe/moe.telemetry": (
        "00b2f2537cefcb165af79f290f41b7a52f245c59011b56141b8278d6e6eb2bdf",
        "82eff4f889040834c2891148d9ecdcd194466134ad2c5357f019cbb3aa8f6d14"),
    "evidence-h100-moe/profile-all-steps": (
        "458ac56cc06d37619c6595c217f781819ff1f309d6eed7b0e4129393be309b28",
        "fd7dd420ff49613b9982d0c410d3952a70b3c997053935e4b09a14906f7b5b9e"),
    "evidence-h100-moe/profile-decode": (
        "1cd3fe0f5c781eabce5cba9c7ae68ac36fd47bc434ddc0fa4e258bfe70da5fcb",
        "f3ffcad734e9058c00454d91767c6e9e937b745beb5b33af42a40c6620313f4f"),
    "evidence-h100-mtp/base": (
        "c1e2b160f60dde86701d1655cec82d34dfa2823bc1c8db9b9302a50b2ca0e525",
        "7db380011522c43e5fb74bd88a131739fd69468879c5fd5d754b078defe3c8b9"),
    "evidence-h100-mtp/base.telemetry": (
        "55d535b02ef2f23e2efbddb9129cd08d8a1c33193415790c6028d1703819c664",
        "ce2fb3ad7ba8c25f13314bd0f9a1964bef31ffaa85bae703d603ef4d2d69ff8c"),
    "evidence-h100-mtp/mtp": (
        "9f91d7ed260ccfa0e96a2b8ae7db6e1edeb954a93c7a2cf9444d50025ec13e0a",
        "5052ac18d1da967c46adf3680d0e666172612e8e85a6951ac57c8228dae8da2c"),
    "evidence-h100-mtp/mtp.telemetry": (
        "2e9110c395bd0cbbde9760563b53a0a9e2d2f1c5fad63d5a294d471c7a61b866",
        "9d506dec6a059adab7eed8f434699178e7fb8e80f99f3ebbba1556f0371141d6"),
    "evidence-h200-bench/eager": (
        "a82d9d86141db4a2dca6d959058337925f5bc7085035bd251fa7e3517d333a13",
        "8e823d2079f9124d1b0c71f513e1d3e0aaf327dfd8314ed06a129bad4494a2ed"),
    "evidence-h200-bench/eager.telemetry": (
        "126c787da24917fcb42d94c13f75721eb76b5c3bb0ef04fa0d575f37f71d82af",
        "3a172125e34cfbbfa74e7f33b0e37b38b540f26752b98b65154529ad034a7df4"),
    "evidence-h200-bench/graphs": (
        "27b9508484b1970ec31559e86be2210eadd9cbe29567ada2ce2843e9ebf455c7",
        "7392f82a516d2e1e0ab1b9d383d1549536b80720a83cf7b6c8d8892f87ab6a88"),
    "evidence-h200-bench/graphs.telemetry": (
        "06358a96af6bd360b74a0ce74dc86e7c411a596e2d723063af8919dbd44bc695",
        "b43a3f133f8275c5b9a733d06636cffd8239475209e601ffe5acefd5260d656b"),
    "evidence-h200-bench/ngram": (
        "81afb80fd061ac5f0b93c88706292b9857289c985e06e513b4382d5c28cc34a6",
        "899bc05c2fc6c51ead19702bfdacf3b3f495ab13744a3edc21a9bcb961b0407d"),
    "evidence-h200-bench/ngram.telemetry": (
        "cc0fa45b875e0a244b7a3c14b35b932cec320ae2b7fa57293acf4625825cc9d5",
        "e9f3bdd77e787c3bcd3e0cae624c092cddde1ead2158155103e398fdc64c1835"),
    "evidence-h200-moe/base": (
        "f7bf84bf526da8a69979a0d79d2dd5ed9ce8408ef5b5e4ed361386d257532fea",
        "323115395b001dbe5ca7970e8dde7f10d487e26e7d330ed3f7c94004f82e75b6"),
    "evidence-h200-moe/base.telemetry": (
        "991d698a2e526cff6eaa0f15535fcdd1218db40f675670f10e4669c06866ab4f",
        "ed27cee3e916e2eeeaf12d52f0a3bd0ec6a064092d5e62672a554c40f3bb25fe"),
    "evidence-h200-moe/mtp": (
        "a0849f813504c0edc832e4a9bb1fa42f7fcd6d0b6d6ca34478da09510de17090",
        "906ce5259df8b1ecc24ae5ea86a287225fd49e3724530788011ef0b8cf31bc4e"),
    "evidence-h200-moe/mtp.telemetry": (
        "fad20072d0d45d6ec059f84fe01d62f71b0a4c74d2680f0a87b97d0314b7e228",
        "e81c1b59a21e00571e5e0eae0860b6d60dda70386e9714b8ecdae97563e7da56"),
    "evidence-h200-moe/profile-decode-tp1": (
        "4cc1e1d0936f388fec9f6ff9783cf7f2a6e83021a8b61e81f8b79f8dc50927be",
        "8211f528c9819ad617b57fbe9f756c25f6e6caed75af20cf7213d658f551c9d2"),
    "evidence-h200-trace/profile-decode-tp1": (
        "e989774018d305a4ebc5892e111b252e6bd31d865ebb2985b84eca3a86f403a8",
        "5415d321fe15f098dca416185cf35454a9d1f0c6c3cfd845b15bf242cebc2b14"),
    "evidence-h200-trace/profile-default-marker": (
        "f77063cb8348a96d12f7dab0301f7c2f1c150727f85f3d27f4e988706bdcbe04",
        "d226bc5567df57ae7d261c76fae0f91bc9d8bb3c571cee5997adc941b7daf75d"),
    "evidence-h200-vllm/math500-completion-resumed": (
        "d8a6ace84b06ea4778d9a983947b6bc75532776c273669b0ed4e6b457c3438f7",
        "cc5354ee750c9fbddab6096065d54548343c4a8add56d55a1b0c847da399fe89"),
    "evidence-h200-vllm/math500-tiny-llama": (
        "49191fb09d2e936845881e63d382577e9adfce3145a4121b2c561306cdbd649a",
        "50188c9c26bc01286c9872cffdb4ead8e598cb45023329bc0a0b66fa92b89158"),
    "evidence-h200-vllm/mmlu_pro-tiny-llama": (
        "dc1412f72cafab8f01a389b612f1eb22ad825e4e8911c780b730d145072afb4f",
        "bb432217a60dc78436fb002f284a50cdb817988afd4461b27b89c9697c1a0445"),
    "evidence-h100-floor/floor-mimo-7b-with-mtp.tar.gz": (
        "5889e119ab03cc5d92d3986de8bc076806f7b69559ed68afbb11b2a3ed981db9",
        "d9fd39e9677663380816a8a4e0c457d35b207306f0c7d8acd9e945fe76bf01a9"),
    "evidence-h100-floor/floor-mimo-7b.tar.gz": (
        "d66e5879cf664a2b04cbf6645e4107f97431819b60080b731b37fa435ed4054b",
        "9084cd243e3839923e741db6eb9fccc4c6670d043ea308e75c0d3a204a342098"),
    "evidence-h100-floor/floor-qwen3-30b-a3b-fp8.tar.gz": (
        "6474f463a7dd45fefce7baf2ea0cb8e702b77c2837a4012342c2269d1a818bf3",
        "c12d4adf017becb82b6e45cc8e7a6d420af3c05b3592c7d59cc0a048ca8dbf2b"),
    "evidence-h200-floor/floor-deepseek-v3-bf16-attention.tar.gz": (
        "ed64a96eec62bc8b3419ebfd4dff2ecc2cc573e835775978473bae8c3ba03a03",
        "90d4980a101b317e9da73f9d223a0dc1bc175accab52c2cade77db54b93589c0"),
    "evidence-h200-floor/floor-deepseek-v3.tar.gz": (
        "9b25302d1d1e71e265a43e959da011719417e7fa74279a52d640d87a78785c12",
        "70c99459eba1e86fe72d7510b0dfe0165a727efbea2b44e164a951362f4f8fd9"),
    "evidence-h200-floor/floor-llama-3.1-8b.tar.gz": (
        "54750cf0d64ff32a2b7c467502a64f979fd62f08c62d0a00879f0b0b1fd92730",
        "52840b21039a3a29bef936891db88dc087082754a3be0411685f1390e6535ed8"),
    "evidence-h200-floor/floor-qwen3-30b-a3b-fp8-experts.tar.gz": (
        "55d74bcdccb153dbf8e6c296c391120b75dac137c6c8b4a7d619613b41972676",
        "4a9b361b7cb6bd70ff0d1d97e0e3a931635a274b2396bad154084371ae3bf781"),
    "evidence-h200-floor/floor-qwen3-30b-a3b.tar.gz": (
        "7aa98f4e0fa054c4c743a050b37b6ae665fe3e769db3efe081fe5f21b95bde47",
        "d8c69f678a38af185d08307f8d29e55418772f860c2e03fb6d7823e4a665b845"),
    "evidence-h200-moe/floor-qwen3-next-80b-a3b-fp8.tar.gz": (
        "acbb69d0b2306f6703bdd9adca4e7dfcd321d4d63dacbd83c268b8e2b755ae90",
        "21d5bf233fa8302752ac6d3e544439a97ddbf098580323397ba2010227704075"),
}


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _figures(manifest: dict, read: Callable[[str], bytes]) -> tuple[str, str]:
    """(files digest, manifest digest) as BEFORE has them."""
    telemetry = manifest["kind"] == "telemetry"
    listing = []
    for f in sorted(manifest["files"], key=lambda f: f["path"]):
        data = read(f["path"])
        if telemetry and f["path"] == "summary.json":
            summary = json.loads(data)
            del summary["throughput_digest"]
            data = _canonical(summary)
        listing.append((f["path"], hashlib.sha256(data).hexdigest()))
    rest = {k: v for k, v in manifest.items() if k not in ("created", "schema_version")}
    extra = dict(rest["provenance"].get("extra") or {})
    if "throughput" in extra:
        extra["throughput"] = {k: v for k, v in extra["throughput"].items() if k != "digest"}
    rest["provenance"] = {**rest["provenance"], "extra": extra}
    rest["files"] = [{k: v for k, v in f.items() if not (telemetry and f["path"] == "summary.json"
                                                         and k in ("sha256", "bytes"))} for f in rest["files"]]
    return hashlib.sha256(_canonical(listing)).hexdigest(), hashlib.sha256(_canonical(rest)).hexdigest()


def _dirs() -> list[str]:
    # evidence-h100-judge's judge calls and their inputs: tests/test_evidence_judge.py
    return sorted(str(p.parent.relative_to(PACKAGES)) for p in PACKAGES.glob("evidence-*/*/manifest.json")
                  if not p.is_relative_to(PACKAGES / "evidence-h100-judge"))


def _bundles() -> list[str]:
    return sorted(str(p.relative_to(PACKAGES)) for p in PACKAGES.glob("evidence-*/*.tar.gz"))


def test_the_rewrite_script_covers_every_package_but_the_kept_ones():
    import importlib.util

    spec = importlib.util.spec_from_file_location("rewrite_evidence", REPO / "scripts" / "rewrite_evidence.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert set(mod.KEPT) == KEPT and set(mod.SUBJECTS).isdisjoint(mod.RECORDED)
    assert set(_dirs()) - KEPT == {*mod.SUBJECTS, *mod.RECORDED}  # H200 and H100
    assert set(_bundles()) == {*mod.FLOORS, *mod.RECORDED_FLOORS}
    assert mod.check() == []  # every package it names is rewritten


def test_the_tables_cover_every_evidence_package():
    dirs, bundles = _dirs(), _bundles()
    assert len(dirs) == 16 + 9 and len(bundles) == 6 + 3  # H200 and H100
    kinds = {d: json.loads((PACKAGES / d / "manifest.json").read_text())["kind"] for d in dirs}
    assert {d for d, k in kinds.items() if k == "throughput"} == set(TOK_S)
    assert {d for d, k in kinds.items() if k == "profile"} == set(KERNELS)
    assert set(bundles) == set(FLOOR_TOK_S)


@pytest.mark.parametrize("rel", _dirs())
def test_each_package_names_what_it_measured(rel):
    assert validate_package(PACKAGES / rel) == []
    with open_package(PACKAGES / rel) as pkg:
        m = pkg.manifest
    subject = m.provenance.subject
    if rel in KEPT:
        assert (m.schema_version, subject) == (1, None)
        return
    # The digest covers the manifest (from 2); version 3's schema describes the subject (2's, frozen, does not).
    assert m.schema_version == MANIFEST_SCHEMA_VERSION
    assert subject is not None, rel
    assert m.provenance.model == subject.model and not subject.model.startswith(("/", "."))
    assert subject.engine == "vllm" and subject.engine_version == "0.26.0"
    assert subject.weights == "random"  # every GPU run here served --load-format dummy
    assert subject.hardware.startswith("1x NVIDIA H")
    assert (subject.model_config_sha256 is None) == (subject.model_config_unknown is not None)


@pytest.mark.parametrize("rel", _bundles())
def test_each_floor_bundle_names_its_checkpoint_config(rel, tmp_path):
    with tarfile.open(PACKAGES / rel) as tf:
        tf.extractall(tmp_path, filter="data")
        config = tf.extractfile("checkpoint/config.json").read()
        floor = json.load(tf.extractfile("floor.json"))
    assert validate_package(tmp_path) == []

    with open_package(tmp_path) as pkg:
        subject = pkg.manifest.provenance.subject
        assert pkg.manifest.schema_version == MANIFEST_SCHEMA_VERSION
    assert subject is not None and subject.weights == "headers-only"
    assert subject.model_config_sha256 == hashlib.sha256(config).hexdigest()  # the config the floor used
    assert floor["floor"]["tokens_per_s"] == FLOOR_TOK_S[rel]


def test_the_before_table_covers_every_evidence_package():
    assert sorted(BEFORE) == sorted([*_dirs(), *_bundles()])


@pytest.mark.parametrize("rel", _dirs())
def test_every_figure_survives_the_rewrite(rel):
    d = PACKAGES / rel
    assert validate_package(d) == []  # the files on disk are the ones the manifest lists
    assert _figures(json.loads((d / "manifest.json").read_bytes()), lambda p: (d / p).read_bytes()) == BEFORE[rel]


@pytest.mark.parametrize("rel", _bundles())
def test_every_floor_figure_survives_the_rewrite(rel):
    with tarfile.open(PACKAGES / rel) as tf:
        def read(name: str) -> bytes:
            member = tf.extractfile(name)
            assert member is not None
            return member.read()

        assert _figures(json.loads(read("manifest.json")), read) == BEFORE[rel]


@pytest.mark.parametrize("rel", sorted(TOK_S))
def test_throughput_figures_are_unchanged(rel):
    with store.open_throughput(PACKAGES / rel) as t:  # recomputed from the rows and checked against the summary
        assert t.summary.tok_s.mean == pytest.approx(TOK_S[rel], rel=1e-12)
    tel = store.find_telemetry(PACKAGES / rel, None)
    assert tel is not None
    with store.open_throughput(PACKAGES / rel) as t, store.open_telemetry(tel, t) as tm:
        assert tm is not None  # the link to the rewritten throughput package holds


@pytest.mark.parametrize("rel", sorted(KERNELS))
def test_profile_figures_are_unchanged(rel):
    s = json.loads((PACKAGES / rel / "summary.json").read_text())
    per_step, total = KERNELS[rel]
    k = (s["steps"] or {}).get("kernels_per_step")
    assert (None if k is None else (k["median"], k["min"], k["max"])) == per_step
    assert s["trace"]["kernels"] == total


def test_the_h200_moe_floor_used_the_evidence_config_not_the_shape_config():
    # issue 32: the evidence config lacks the MTP fields of the committed shape config; the floor used the former

    evidence = (PACKAGES / "evidence-h200-moe" / "qwen3-next-80b-a3b-fp8.config.json").read_bytes()
    shape = (REPO / "scripts" / "shapes" / "qwen3-next-80b-a3b-fp8.config.json").read_bytes()
    ev, sh = json.loads(evidence), json.loads(shape)
    assert {k: sh[k] for k in sh.keys() - ev.keys()} == {"mtp_num_hidden_layers": 1,
                                                          "mtp_use_dedicated_embeddings": False}
    assert ev.keys() <= sh.keys() and [k for k in ev if ev[k] != sh[k]] == ["quantization_config"]
    kept_ev, kept_sh = (c["quantization_config"].pop("modules_to_not_convert") for c in (ev, sh))
    assert ev["quantization_config"] == sh["quantization_config"]
    assert set(kept_ev) - set(kept_sh) == {"model.embed_tokens"} and set(kept_sh) <= set(kept_ev)
    with tarfile.open(PACKAGES / "evidence-h200-moe" / "floor-qwen3-next-80b-a3b-fp8.tar.gz") as tf:
        m = json.load(tf.extractfile("manifest.json"))
    assert m["provenance"]["subject"]["model_config_sha256"] == hashlib.sha256(evidence).hexdigest()
