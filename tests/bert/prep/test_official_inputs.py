"""The official inputs of `data mlperf` (bert.prep.official_inputs): found, checked against their md5 list."""

import pytest

from bert.prep.official_inputs import MD5_LIST, InputError, find_inputs, read_md5_list, verify_inputs


def test_missing_and_unlisted_inputs_are_named(download, tmp_path):
    (download / "results4" / "part-00002-of-00003").unlink()
    with pytest.raises(InputError, match=r"part-00002-of-00003: listed in .* but missing"):
        verify_inputs(find_inputs(download), tmp_path / "md5.json", show_progress=False)
    (download / "results4" / "part-00003-of-00003").write_text("extra\n\ntext\n")
    with pytest.raises(InputError, match=r"part-00003-of-00003: not in .*bert_reference_results_text_md5\.txt"):
        verify_inputs(find_inputs(download), tmp_path / "md5.json", show_progress=False)


def test_the_md5_list_is_read_in_its_usual_layouts(tmp_path):
    digest = "a64a7c31eff5cd38ae6d94f7a6229dab"
    path = tmp_path / MD5_LIST
    path.write_text(f"| File | Size (bytes) | MD5 |\n|---|---:|---|\n| part-00000-of-00500 | 27150902 | {digest} |\n"
                    f"{digest}  results4/part-00001-of-00500\n{digest} *eval.txt\npart-00002-of-00500\t{digest}\n")
    assert read_md5_list(path) == {"part-00000-of-00500": digest, "part-00001-of-00500": digest, "eval.txt": digest,
                                   "part-00002-of-00500": digest}
    path.write_text(f"part-00000-of-00500 {digest}\nno digest here\n")
    with pytest.raises(InputError, match=r"line 2: expected a file name and an md5"):
        read_md5_list(path)
