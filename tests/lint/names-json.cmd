lint names.jinja --schema schema.json --reads --format json
