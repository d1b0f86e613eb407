lint --format json multi.jinja multi.erb
