lint soft.jinja syntax.jinja --format json
