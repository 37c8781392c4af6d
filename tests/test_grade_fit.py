"""Issue 20: a spec that does not fit the responses says so. The `gpqa_diamond` spec expects a final
`Answer: X` line; the third-party GPQA Diamond responses were never prompted for one (97% no answer)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

GPQA = "gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz"


@pytest.fixture(scope="module")
def gpqa(tmp_path_factory):
    from audit.cli import main
    from tests.conftest import shared_path

    src = shared_path(GPQA)
    d = tmp_path_factory.mktemp("gpqa_fit")
    item_id = "item_id=gpqa-{item_index:03d}-v{version}"
    for args in (("--kind", "responses", "-o", d / "responses", "--benchmark", "gpqa_diamond", "--map", item_id,
                  "--sample-from", "model"),
                 ("--kind", "items", "-o", d / "items", "--dedupe", "--map", item_id, "--map", "reference=gold_letter",
                  "--const", "protected=true", "--const", "num_choices=4")):
        assert main(["import", "table", str(src), "--gzip", *map(str, args)]) == 0
    return d


def test_a_spec_whose_format_the_responses_lack_says_so_and_names_extractors_that_read_them(gpqa, cli):
    d = gpqa
    r = cli("grade", d / "responses", "--items", d / "items", "--benchmark", "gpqa_diamond", "-o", d / "g.json")
    assert r.code == 0
    warning = [line for line in r.out.splitlines() if line.startswith("warning:")]
    assert warning == ["warning: 6,247 of 6,336 rows (98.60%) read no answer: these responses do not look written in "
                       "the format gpqa.final_line@1 expects (GPQA: the letter on the response's final 'Answer: X' line "
                       "only; cut responses give none)"]
    hint = r.out.splitlines()[r.out.splitlines().index(warning[0]) + 1]
    assert hint == ("  1,000 of those responses re-read with the other registered extractors: choice.freeform@1 reads "
                    "one in 675; mmlu_pro.official@f418b11 reads one in 171; mmlu_pro.official_x@7535b16 reads one "
                    "in 171 (--extractor NAME, or a --benchmark whose spec uses it)")
    # a spec that fits says nothing
    r = cli("grade", d / "responses", "--items", d / "items", "--benchmark", "choice", "-o", d / "c.json")
    assert r.code == 0 and "warning:" not in r.out


def test_fit_check_is_a_library_call(gpqa):
    from audit.grade import fit_check, grade_package
    from audit.specs import resolve_config

    config = resolve_config("gpqa_diamond")
    grading = grade_package(gpqa / "responses", config, items=gpqa / "items")
    fit = fit_check(grading, gpqa / "responses", config, sample=50)
    assert (fit.no_answer, fit.read, fit.sampled, fit.extractor) == (6247, 6336, 50, "gpqa.final_line@1")
    assert fit.better[0][0] == "choice.freeform@1" and fit.better[0][1] > 25
