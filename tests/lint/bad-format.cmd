lint ok.jinja --format yaml
