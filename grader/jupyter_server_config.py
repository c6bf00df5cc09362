# Jupyter server configuration for the grading server: the JupyterLab where nbgrader's formgrader runs.
#
#     cd grader && jupyter lab --config=jupyter_server_config.py
#
# The formgrader renders what students handed in, logged in as the instructor. The course makes every
# hand-in inert before it is shown (grader/heads_html.py); this file limits what a script that still got
# through could do. Use this server for grading only, not as your everyday Jupyter server: it has no
# terminals, and it trusts nothing it displays.
#
# Self-contained (it imports nothing from the course), so it can be copied to ~/.jupyter/ on a hub.

c = get_config()  # noqa: F821 (provided by traitlets)

# A script running as the instructor could otherwise open a shell on this machine through /api/terminals.
c.ServerApp.terminals_enabled = False

# Nothing is loaded from, sent to, or framed from another site; no plugins; forms only to this server.
# script-src keeps 'unsafe-inline' (nbgrader's pages are inline scripts) and 'unsafe-eval': measured
# with Chromium 156, JupyterLab 4.6 never finished loading without it (no Nbgrader menu after 120 s).
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": CONTENT_SECURITY_POLICY}}
