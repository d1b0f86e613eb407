lint nosuch.jinja
