# Jupyter server configuration for the instructor's JupyterLab, where nbgrader's formgrader runs.
#
#     cd grader && jupyter lab --config=jupyter_server_config.py
#
# Student output reaches the formgrader only sanitised (grader/heads_html.py); this header is the
# second line of defence: whatever script might still run could not load plugins, nor send
# anything to, load anything from, or submit a form to another site.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heads_html import CONTENT_SECURITY_POLICY  # noqa: E402

c = get_config()  # noqa: F821 (provided by traitlets)
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY}}
