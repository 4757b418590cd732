"""
List the accounts with invoices in ${status} status: for each account, its advertiser,
how many such invoices it has and their total amount, keeping the ${n} largest totals.
"""
invoices = api.table("invoice", ["account_id", "amount"], "status = " + repr(${status}))
accounts = api.query(
    "SELECT acc.id AS account_id, acc.name AS account, a.name AS advertiser "
    "FROM account acc JOIN advertiser a ON a.id = acc.advertiser_id"
)
owed = (
    invoices.merge(accounts, on="account_id")
    .groupby(["account", "advertiser"], as_index=False)
    .agg(invoices=("amount", "size"), amount=("amount", "sum"))
)
result = (
    owed.sort_values(["amount", "account"], ascending=[False, True])
    .head(${n}).reset_index(drop=True)
)
