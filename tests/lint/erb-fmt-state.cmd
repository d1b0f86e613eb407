lint view.erb prompt.fmt --state state.json --reads
