"""The urwid console: TuiApp and its views (SDD §13.2). Reads projections only.

Owns the full-screen console (``TuiApp``), its components (``views``), the slash-command
parser (``commands``), the text sanitiser and folding (``text``), an answer's Markdown
(``markdown``, with ``syntax`` colouring its code blocks) and the plain line-oriented console
for screen readers and dumb terminals (``PlainConsole``). Imports ``air.contracts`` only (and
markdown-it-py, Pygments): it reads a ``ProjectionClient`` and writes a ``UiCommandChannel``.

Each name is imported from its module (``air.ui_urwid.app.TuiApp``, ``air.ui_urwid.plain.
PlainConsole``): the package itself imports nothing, so the console's first frame
(``first_frame``, the standard library only) is drawn before urwid, Trio and pydantic load
(IMPL-FRAME-5).
"""
