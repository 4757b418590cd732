"""Top ${n} campaigns."""
n = ${dayz}
result = api.query("SELECT 1").head(${n})
