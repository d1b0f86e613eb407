lint soft.jinja syntax.jinja
