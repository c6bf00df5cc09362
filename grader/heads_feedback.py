"""Feedback preprocessing for the Heads course (loaded by nbgrader_config.py)."""
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool


class ShortenTracebacks(Preprocessor):
    """Replace each error's traceback by its last line, `ExceptionType: message`.

    Traceback frames quote the code that raised, which for a hidden test is the hidden test itself.
    The course's checks put everything a student needs into the message.
    """

    # nbconvert's preprocessors are off unless enabled; this one must always run.
    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
