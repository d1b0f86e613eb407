lint ok.jinja --state state.json --reads
