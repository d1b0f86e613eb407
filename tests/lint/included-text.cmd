lint included.jinja --state included.state.json
