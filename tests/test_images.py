"""Images are data a run directory or an input names, so they are checked, never trusted: a local image is read only
when its real path lies under the image directory and its bytes are a PNG, JPEG, GIF or WebP image (never SVG);
anything else is a FILE:LINE error before any request for its record. The review app serves images the same way,
with a CSP that gives them no power, and never through a symlink."""
from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import Taxonomy, load_trajectories, render_messages
from injector.cli.commands import main
from injector.util.errors import InputError, UserError
from test_multimodal import ANSWER, STEPS, tiny_png
from test_review import candidate, make_run, running

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9"


def write_input(path: Path, *images: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": "v1", "question": "What is the slope of the line in the figure?",
                                "steps": STEPS, "answer": "2", "images": list(images)}) + "\n")
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def run_args(server, input_path: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--category", "counterfactual", "--input", str(input_path), "--model", "openai/vision",
            "--api-base", server.api_base, "--out", str(out), *extra]


# ---- loading: what a record may name ----------------------------------------------------------------------

@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_a_file_outside_the_input_directory_is_refused_before_any_request(how, tmp_path, scripted_server):
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    reference = "../secret.txt" if how == "relative" else str(secret)
    path = write_input(tmp_path / "data" / "input.jsonl", reference)
    scripted_server.script = lambda request: json.dumps(ANSWER)
    result = invoke(*run_args(scripted_server, path, tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert f"{path}:1: image {reference}: resolves to {secret}, outside the image directory {path.parent}" in \
        result.output
    assert "--images-from" in result.output and "Traceback" not in result.output
    assert scripted_server.requests == []


def test_a_png_outside_the_image_directory_is_refused_too(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "fig.png").write_bytes(tiny_png())
    path = write_input(tmp_path / "data" / "input.jsonl", str(tmp_path / "elsewhere" / "fig.png"))
    with pytest.raises(InputError, match=r"input\.jsonl:1: image .*outside the image directory"):
        list(load_trajectories(path))


@pytest.mark.parametrize("name, content", [("notes.png", b"just text, named like an image\n"), ("fig.svg", SVG),
                                           ("fig.png", SVG), ("empty.png", b"")])
def test_a_file_that_is_not_a_raster_image_is_refused(name, content, tmp_path, scripted_server):
    (tmp_path / name).write_bytes(content)
    path = write_input(tmp_path / "input.jsonl", name)
    result = invoke(*run_args(scripted_server, path, tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert f"{path}:1: image {name}: not a PNG, JPEG, GIF or WebP image by its bytes (SVG is never sent)" in \
        result.output
    assert scripted_server.requests == []
    # render reads through the same loader: the same error, nothing printed for the record
    rendered = invoke("render", "--category", "counterfactual", "--input", str(path))
    assert rendered.exit_code == 2 and f"{path}:1: image {name}: not a PNG" in rendered.output


def test_a_symlink_out_of_the_image_directory_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "fig.png").symlink_to(tmp_path / "secret.txt")
    path = write_input(tmp_path / "data" / "input.jsonl", "fig.png")
    with pytest.raises(InputError, match=f"input.jsonl:1: image fig.png: resolves to {tmp_path / 'secret.txt'}, "
                                         "outside the image directory"):
        list(load_trajectories(path))


def test_a_symlink_within_the_image_directory_is_kept_as_its_real_path(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "line.png").write_bytes(tiny_png())
    (tmp_path / "alias.png").symlink_to(tmp_path / "figures" / "line.png")
    path = write_input(tmp_path / "input.jsonl", "alias.png")
    [trajectory] = list(load_trajectories(path))
    assert trajectory.images == [str((tmp_path / "figures" / "line.png").resolve())]


def test_a_missing_image_is_an_error_at_load_time(tmp_path):
    path = write_input(tmp_path / "input.jsonl", "figures/gone.png")
    with pytest.raises(InputError, match=r"input\.jsonl:1: image figures/gone.png: no such file"):
        list(load_trajectories(path))


@pytest.mark.parametrize("reference", ["fig\u0000.png", "~/fig.png"])
def test_odd_paths_are_errors_not_crashes(reference, tmp_path):
    (tmp_path / "fig.png").write_bytes(tiny_png())
    path = write_input(tmp_path / "input.jsonl", reference)
    result = invoke("render", "--category", "counterfactual", "--input", str(path))
    assert result.exit_code == 2 and f"{path}:1: image " in result.output, result.output


def test_skip_invalid_counts_a_record_with_a_refused_image(tmp_path):
    (tmp_path / "notes.png").write_text("text\n")
    path = write_input(tmp_path / "input.jsonl", "notes.png")
    source = load_trajectories(path, skip_invalid=True)
    assert list(source) == [] and source.stats.invalid == 1


def test_images_from_widens_the_image_directory(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "fig.png").write_bytes(tiny_png())
    path = write_input(tmp_path / "data" / "input.jsonl", "../images/fig.png")
    with pytest.raises(InputError, match="outside the image directory"):
        list(load_trajectories(path))
    source = load_trajectories(path, images_from=tmp_path)
    assert [t.images for t in source] == [[str((tmp_path / "images" / "fig.png").resolve())]]
    assert source.image_base == tmp_path.resolve()
    with pytest.raises(UserError, match="--images-from .*: not a directory"):
        load_trajectories(path, images_from=tmp_path / "nowhere")


def test_a_saved_dataset_has_no_image_directory_unless_one_is_given(tmp_path):
    import datasets

    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "fig.png").write_bytes(tiny_png())
    rows = [{"id": "r0", "question": "Q", "steps": ["s"], "images": [str(tmp_path / "images" / "fig.png")]}]
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "ds"))
    source = load_trajectories(tmp_path / "ds")
    assert source.image_base is None
    with pytest.raises(InputError, match=r"ds:1: image .*fig.png: a local path, but this input has no image "
                                         r"directory .*--images-from DIR"):
        list(source)
    result = invoke("render", "--category", "counterfactual", "--input", str(tmp_path / "ds"), "--images-from",
                    str(tmp_path / "images"))
    assert result.exit_code == 0, result.output
    assert "--- image part ---\n" + str((tmp_path / "images" / "fig.png").resolve()) in result.output
    # a relative path in a dataset resolves against --images-from
    datasets.Dataset.from_list([{**rows[0], "images": ["fig.png"]}]).save_to_disk(str(tmp_path / "ds2"))
    [trajectory] = list(load_trajectories(tmp_path / "ds2", images_from=tmp_path / "images"))
    assert trajectory.images == [str((tmp_path / "images" / "fig.png").resolve())]


def test_urls_stay_references_and_data_urls_must_be_raster_images(tmp_path):
    png_url = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
    allowed = ["https://example.org/fig.png", "http://example.org/fig.gif", png_url]
    [trajectory] = list(load_trajectories(write_input(tmp_path / "ok.jsonl", *allowed)))
    assert trajectory.images == allowed
    refused = {
        "data:image/svg+xml;base64," + base64.b64encode(SVG).decode(): "must be data:image/png|jpeg|gif|webp",
        "data:text/html;base64,PHNjcmlwdD4=": "must be data:image/png|jpeg|gif|webp",
        "data:image/png;base64," + base64.b64encode(b"not a png at all").decode(): "bytes are not a PNG image",
        "data:image/png,%89PNG": "must be data:image/png|jpeg|gif|webp;base64",
        "file:///etc/passwd": "only http(s) URLs, data: URLs or local paths are allowed",
    }
    for n, (reference, why) in enumerate(refused.items()):
        path = write_input(tmp_path / f"bad{n}.jsonl", reference)
        with pytest.raises(InputError, match=rf"bad{n}\.jsonl:1: .*{re.escape(why)}"):
            list(load_trajectories(path))


@pytest.mark.parametrize("head, kind", [
    (tiny_png()[:16], "image/png"), (JPEG[:16], "image/jpeg"), (b"GIF89a\x01\x00\x01\x00", "image/gif"),
    (b"GIF87a\x01\x00", "image/gif"), (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"), (SVG[:16], None),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", None), (b"\x89PNG", None), (b"", None)])
def test_the_type_comes_from_the_bytes(head, kind):
    from injector.util.images import sniff_image_type

    assert sniff_image_type(head) == kind


def test_the_image_part_takes_its_type_from_the_bytes_not_the_name(tmp_path, scripted_server):
    (tmp_path / "photo.png").write_bytes(JPEG)  # a JPEG named .png
    [trajectory] = list(load_trajectories(write_input(tmp_path / "input.jsonl", "photo.png")))
    taxonomy = Taxonomy.load()
    messages = render_messages(taxonomy, taxonomy.category("counterfactual"), trajectory)
    assert messages[1]["content"][1]["image_url"]["url"] == "data:image/jpeg;base64," + base64.b64encode(JPEG).decode()


def test_an_image_swapped_for_a_symlink_after_loading_is_not_read(tmp_path):
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    (tmp_path / "fig.png").write_bytes(tiny_png())
    [trajectory] = list(load_trajectories(write_input(tmp_path / "input.jsonl", "fig.png")))
    (tmp_path / "fig.png").unlink()
    (tmp_path / "fig.png").symlink_to(tmp_path / "secret.txt")
    taxonomy = Taxonomy.load()
    with pytest.raises(UserError, match="the path goes through a symlink"):
        render_messages(taxonomy, taxonomy.category("counterfactual"), trajectory)
    (tmp_path / "fig.png").unlink()
    (tmp_path / "fig.png").write_text("now text\n")
    with pytest.raises(UserError, match="not a PNG, JPEG, GIF or WebP image by its bytes"):
        render_messages(taxonomy, taxonomy.category("counterfactual"), trajectory)


def test_the_manifest_records_the_image_directory(tmp_path, scripted_server):
    (tmp_path / "data" / "figures").mkdir(parents=True)
    (tmp_path / "data" / "figures" / "line.png").write_bytes(tiny_png())
    path = write_input(tmp_path / "data" / "input.jsonl", "figures/line.png")
    scripted_server.script = lambda request: json.dumps(ANSWER)
    result = invoke(*run_args(scripted_server, path, tmp_path / "run"))
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["image_base"] == str((tmp_path / "data").resolve())
    result = invoke(*run_args(scripted_server, path, tmp_path / "run2", "--images-from", str(tmp_path)))
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run2" / "manifest.json").read_text())["image_base"] == str(tmp_path.resolve())


# ---- the review app's /image route --------------------------------------------------------------------------

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get_image(server, n: int, key: str = "0/t7::counterfactual::0") -> tuple[int, dict[str, str], bytes]:
    from urllib.parse import urlencode

    url = f"http://127.0.0.1:{server.port}/image?" + urlencode({"key": key, "n": n, "token": server.token})
    try:
        with _OPENER.open(url, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def review_run(tmp_path: Path, images: list[str], image_base: str | None) -> Path:
    run = make_run(tmp_path / "run", [candidate("t7::counterfactual::0", images=images)])
    manifest = json.loads((run / "manifest.json").read_text())
    if image_base is not None:
        manifest["image_base"] = image_base
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.fixture
def figures(tmp_path: Path) -> Path:
    base = tmp_path / "figures"
    base.mkdir()
    (base / "line.png").write_bytes(tiny_png())
    (base / "photo.png").write_bytes(JPEG)
    (base / "evil.svg").write_bytes(SVG)
    (base / "evil.png").write_bytes(SVG)
    (base / "notes.png").write_text("text\n")
    (base / "alias.png").symlink_to(base / "line.png")  # a symlink, even to an image in the directory
    (tmp_path / "outside.png").write_bytes(tiny_png())
    return base


def test_the_review_app_serves_only_raster_images_under_the_run_image_directory(tmp_path, figures):
    names = ["line.png", "photo.png", "evil.svg", "evil.png", "notes.png", "alias.png", str(tmp_path / "outside.png"),
             "../outside.png", "https://example.org/remote.png", "missing.png", "line\u0000.png"]
    run = review_run(tmp_path, [str(figures / "line.png"), *names[1:]], str(figures))
    with running([run]) as server:
        status, headers, body = get_image(server, 0)
        assert status == 200 and body == tiny_png() and headers["Content-Type"] == "image/png"
        assert headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
        assert headers["X-Content-Type-Options"] == "nosniff"
        status, headers, body = get_image(server, 1)
        assert status == 200 and body == JPEG and headers["Content-Type"] == "image/jpeg"  # by bytes, not name
        assert get_image(server, 10)[0] == 404  # a NUL in the candidate's path: refused, not a server error
        why = {2: b"not a PNG, JPEG, GIF or WebP", 3: b"not a PNG, JPEG, GIF or WebP",
               4: b"not a PNG, JPEG, GIF or WebP", 5: b"goes through a symlink", 6: b"outside the image directory",
               7: b"outside the image directory", 8: b"no such image", 9: b"cannot open it"}
        for n, reason in why.items():
            status, headers, body = get_image(server, n)
            assert status == 404 and reason in body, (n, names[n], body)
            assert not headers["Content-Type"].startswith("image/")


def test_images_are_shown_local_files_served_remote_never_fetched(tmp_path, figures):
    # moved here from test_review.py: the page links local images through the token-guarded route
    from test_review import http

    run = review_run(tmp_path, [str(figures / "line.png"), "https://example.org/remote.png"], str(figures))
    with running([run]) as server:
        status, headers, page = http(server, "/")
        assert status == 200 and "img-src 'self'" in headers["Content-Security-Policy"]
        assert 'src="/image?key=0%2Ft7%3A%3Acounterfactual%3A%3A0&amp;n=0"' in page
        assert "https://example.org/remote.png</code> (remote: not loaded)" in page
        assert get_image(server, 0)[0] == 200
        assert http(server, "/image?key=0%2Ft7%3A%3Acounterfactual%3A%3A0&n=0", token=False)[0] == 403
        for bad in ("n=1", "n=5", "n=../../etc/passwd"):
            assert http(server, f"/image?key=0%2Ft7%3A%3Acounterfactual%3A%3A0&{bad}")[0] == 404


def test_relative_images_resolve_against_the_image_directory_not_the_current_one(tmp_path, figures, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "line.png").write_bytes(JPEG)  # the same name in the current directory must not be served
    monkeypatch.chdir(elsewhere)
    run = review_run(tmp_path, ["line.png"], str(figures))
    with running([run]) as server:
        status, _, body = get_image(server, 0)
        assert status == 200 and body == tiny_png()
    # a relative image_base in a manifest resolves against the run directory
    run = review_run(tmp_path, ["line.png"], "../figures")
    with running([run]) as server:
        status, _, body = get_image(server, 0)
        assert status == 200 and body == tiny_png()


def test_a_run_without_an_image_directory_serves_no_local_image(tmp_path, figures):
    run = review_run(tmp_path, [str(figures / "line.png")], None)
    with running([run]) as server:
        status, _, body = get_image(server, 0)
        assert status == 404 and b"records no image directory" in body


def test_the_review_page_lists_data_urls_without_their_data(tmp_path, figures):
    from test_review import http

    data_url = "data:image/png;base64," + base64.b64encode(tiny_png() * 50).decode()
    run = review_run(tmp_path, [data_url, "https://example.org/remote.png"], str(figures))
    with running([run]) as server:
        status, _, page = http(server, "/")
        assert status == 200 and data_url not in page
        assert f"data:image/png;base64,…</code> (embedded, {len(data_url)} characters: not shown)" in page
        assert "https://example.org/remote.png</code> (remote: not loaded)" in page
