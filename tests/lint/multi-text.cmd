lint multi.jinja multi.erb multi.fmt
