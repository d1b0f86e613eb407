lint names.jinja --state state.json --reads
