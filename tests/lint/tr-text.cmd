lint tr.jinja
