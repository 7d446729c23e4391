"""MkDocs hook (mkdocs.yml): docs/app/README.md is the web app's page, one page of the "Guides" section, not the
section's index. MkDocs names a README.md "index", and mkdocs-material's ``navigation.indexes`` makes an index
page the link of its section, so "Guides" opened the web app and "Web app" left the sidebar. The file keeps its
name (GitHub shows it as docs/app/'s page; README.md and the other pages link it there) and its URL (app/)."""

from __future__ import annotations

APP = "app/README.md"


def on_files(files, config):
    app = files.get_file_from_path(APP)
    if app is not None:
        dest, url = app.dest_uri, app.url  # computed (and kept) while the file is still named "index"
        app.name = "app"  # Page.is_index reads file.name == "index"
        app.dest_uri, app.url = dest, url
    return files
