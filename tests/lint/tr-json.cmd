lint tr.jinja --format json
