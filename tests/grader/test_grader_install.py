"""The grader-only install (`requirements-grader.txt`, README "For instructors"): the course and the
nbgrader that the tests run with (requirements-dev.txt), without the test stack."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def requirements(name: str) -> set[str]:
    lines = (REPO / name).read_text().splitlines()
    return {line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()}


def test_grader_install_is_the_tested_course_and_nbgrader_without_the_test_stack():
    grader, dev = requirements("requirements-grader.txt"), requirements("requirements-dev.txt")
    assert "-r requirements.txt" in grader
    assert grader <= dev, grader - dev  # every pin the same as the tested environment's
    names = {r.split("=")[0].split("<")[0].split(">")[0] for r in grader}
    assert "nbgrader" in names and not names & {"pytest", "nbval", "pytest-xdist", "playwright"}
