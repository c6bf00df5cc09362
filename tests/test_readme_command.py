"""The README's first command opens JupyterLab on the whole repository with lesson 00 in front.

Passing a notebook's path to `jupyter lab` makes that notebook's folder the server's root, so no other
lesson can be opened; the README instead sets the root to the repository and lesson 00 as the default
URL. This starts the server with exactly the README's arguments (plus loopback, a token and no
browser) and asks it for other lessons.
"""
import re
import shlex
import urllib.error
import urllib.request
from pathlib import Path

from lab_server import jupyter_lab

REPO = Path(__file__).resolve().parents[1]
LESSON_00 = "lessons/00_representations/00_representations.ipynb"


def readme_lab_arguments() -> list[str]:
    text = (REPO / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    command = next(part.strip() for part in first_block.split("&&") if part.strip().startswith("jupyter lab"))
    return shlex.split(command)[2:]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_readme_opens_the_repository_with_lesson_00_in_front(tmp_path):
    args = readme_lab_arguments()
    assert not any(a.endswith(".ipynb") and not a.startswith("--") for a in args), (
        f"a notebook path as argument makes its folder the server root: {args}")
    token = "readme-test"
    # set_root=False: the README's own arguments must make the repository the root.
    with jupyter_lab(REPO, token, *args, log=tmp_path / "lab.log", set_root=False) as url:
        for lesson in ("lessons/03_sequence_head", "lessons/08_real_model", LESSON_00):
            with urllib.request.urlopen(f"{url}/api/contents/{lesson}?content=0&token={token}", timeout=10) as r:
                assert r.status == 200, lesson
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(f"{url}/?token={token}", timeout=10)
            raise AssertionError("/ did not redirect")
        except urllib.error.HTTPError as err:
            assert err.code == 302 and err.headers["Location"].startswith(f"/lab/tree/{LESSON_00}"), err.headers
        with urllib.request.urlopen(f"{url}/lab/tree/{LESSON_00}?token={token}", timeout=30) as r:
            assert r.status == 200
