lint ok.jinja
