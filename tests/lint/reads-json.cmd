lint --reads --format json names.jinja ok.jinja
