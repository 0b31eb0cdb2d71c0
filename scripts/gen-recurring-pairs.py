#!/usr/bin/env python3
"""Builds tests/fixtures/recurring_pairs_split.json, the labelled set the recurring-issue matcher
is tuned and measured on (issue 22).

The source is the catalogue below: defect scenarios written by hand, each restated the ways
reviewers restate a problem between iterations (another vocabulary for the same defect, the
mechanism instead of the name, the symptom instead of the cause, "still", a changed measurement,
another word order, a prefix, a longer or shorter title, another language's idiom), grouped by
file so that different defects sit on nearby lines of the same file; plus hard negatives of the
kinds that fooled the matcher (different requirements on nearby lines, the same title far apart in
a long file, the same endpoint with another wrong status, another case of the same check).

Pairs: every two restatements of one scenario are the same problem (lines shifted a little, a side
sometimes without its file or line); restatements of two scenarios of one file are different
problems; the hard negatives are different problems.

THE SPLIT IS BY SCENARIO AND FIXED BEFORE TUNING: a scenario (and every pair built from it) is
`heldout` when the CRC32 of its id is 0-3 mod 10, else `tune`. The matcher is tuned on `tune`
only; `tests/recurring_matcher.rs` reports both and fails below F1 0.9 on `heldout`.

Usage: scripts/gen-recurring-pairs.py > tests/fixtures/recurring_pairs_split.json
"""
import itertools
import json
import zlib

# (id, type, file, line, [restatements]) grouped by file; ids are unique.
FILES = [
    # ---- Python web service
    ("src/api/orders.py", [
        ("py-sqli", "security", 42, [
            "SQL injection in get_orders: user input concatenated into the query",
            "get_orders builds its SQL with an f-string from request args (injectable)",
            "Query in get_orders is not parameterized",
            "User-controlled `status` is interpolated into raw SQL in get_orders",
        ]),
        ("py-debug", "code_quality", 57, [
            "Leftover print() debugging statement in get_orders",
            "Debug output left in get_orders",
            "Remove the print call that dumps the order rows",
            "get_orders still prints every row to stdout",
        ]),
        ("py-n1", "performance", 61, [
            "N+1 queries when loading order items",
            "Each order triggers a separate query for its items",
            "Order items are fetched in a loop, one query per order",
            "get_orders issues one SELECT per order to load line items",
        ]),
    ]),
    ("src/api/users.py", [
        ("py-email-validate", "error_handling", 18, [
            "Email format is not validated on signup",
            "Signup accepts malformed email addresses",
            "No validation of the email field in create_user",
            "create_user stores emails like 'foo@' without checking them",
        ]),
        ("py-password-len", "error_handling", 21, [
            "Password minimum length is not enforced",
            "Signup accepts one-character passwords",
            "No check on password length in create_user",
            "create_user lets users register with a password shorter than 8 characters",
        ]),
        ("py-bare-except", "error_handling", 64, [
            "Bare except swallows all errors in delete_user",
            "delete_user catches every exception and ignores it",
            "except: pass in delete_user hides failures",
            "Errors raised while deleting a user are silently discarded",
        ]),
    ]),
    # ---- TypeScript frontend
    ("src/components/Cart.tsx", [
        ("ts-console", "code_quality", 33, [
            "console.log left in Cart component",
            "Remove debug logging from Cart render",
            "Cart still logs the whole cart state to the console",
            "Stray console.log(cart) in Cart.tsx",
        ]),
        ("ts-xss", "security", 71, [
            "XSS: product description rendered with dangerouslySetInnerHTML",
            "Cart renders unescaped HTML from the product description",
            "Cross-site scripting via product description in the cart",
            "Untrusted description is injected as raw HTML in Cart",
        ]),
        ("ts-key", "code_quality", 88, [
            "List items in Cart are missing a key prop",
            "React warns: each child in the cart list needs a unique key",
            "No key on the mapped CartItem elements",
            "Cart item list renders without keys",
        ]),
    ]),
    ("src/hooks/useSearch.ts", [
        ("ts-race", "error_handling", 25, [
            "Race condition: stale search results overwrite newer ones",
            "Out-of-order responses in useSearch show results for an old query",
            "useSearch does not cancel the previous request, so a slow older response wins",
            "Typing fast shows results of a previous query (responses arrive out of order)",
        ]),
        ("ts-debounce", "performance", 14, [
            "Search input is not debounced",
            "useSearch fires a request on every keystroke",
            "An API call is made for each character typed",
            "No debounce on the search query, flooding the backend",
        ]),
    ]),
    # ---- Go service
    ("internal/cache/store.go", [
        ("go-race", "error_handling", 40, [
            "Data race on the map in Store.Get and Store.Set",
            "Concurrent map access without a mutex in Store",
            "Store is not safe for concurrent use: map written from several goroutines",
            "fatal error: concurrent map writes under load (Store.Set)",
        ]),
        ("go-leak", "performance", 77, [
            "Goroutine leak in the cache janitor when Close is called",
            "The janitor goroutine never exits after Store.Close",
            "Store.Close does not stop the cleanup goroutine",
            "Background cleanup loop keeps running after the store is closed",
        ]),
        ("go-ignored-err", "error_handling", 95, [
            "Error from json.Marshal is ignored in Store.Save",
            "Store.Save discards the error returned by json.Marshal",
            "Unchecked error: `data, _ := json.Marshal(v)` in Save",
            "Save ignores marshalling failures",
        ]),
    ]),
    ("cmd/server/main.go", [
        ("go-println", "code_quality", 31, [
            "Debug fmt.Println left in main",
            "Remove the fmt.Println that prints the config",
            "main still prints the full configuration to stdout",
            "Leftover debug print of cfg in main.go",
        ]),
        ("go-secret", "security", 12, [
            "Hardcoded database password in main.go",
            "DB credentials are committed in the source",
            "The Postgres password is a string literal in main",
            "Secret in code: dsn contains a plaintext password",
        ]),
    ]),
    # ---- Java
    ("src/main/java/com/acme/billing/InvoiceService.java", [
        ("java-npe", "error_handling", 58, [
            "NullPointerException when the customer has no address",
            "Missing null check on customer.getAddress() in createInvoice",
            "createInvoice crashes for customers without an address",
            "NPE in InvoiceService.createInvoice if address is null",
        ]),
        ("java-sysout", "code_quality", 102, [
            "System.out.println debugging output in InvoiceService",
            "Remove System.out.println from createInvoice",
            "InvoiceService still writes debug lines to standard out",
            "Leftover println of the invoice total",
        ]),
        ("java-rounding", "acceptance_criteria", 75, [
            "Invoice totals are rounded with float arithmetic",
            "Use BigDecimal for money: totals off by a cent",
            "Total is computed with double and loses precision",
            "Rounding error in invoice total (double instead of BigDecimal)",
        ]),
    ]),
    ("src/main/java/com/acme/api/ReportController.java", [
        ("java-sqli", "security", 44, [
            "SQL injection in ReportController.search via string concatenation",
            "The search endpoint concatenates the `q` parameter into a JDBC query",
            "Use a PreparedStatement in ReportController.search",
            "Unsanitized request parameter reaches Statement.executeQuery",
        ]),
        ("java-status-404", "acceptance_criteria", 80, [
            "GET /reports/{id} returns 500 instead of 404 for an unknown id",
            "Unknown report id yields an internal server error rather than 404",
            "ReportController.get should answer 404 when the report does not exist, it answers 500",
            "Missing report leads to HTTP 500, expected 404",
        ]),
    ]),
    # ---- Rust
    ("src/parser.rs", [
        ("rs-unwrap", "error_handling", 66, [
            "parse_header panics on malformed input (unwrap on None)",
            "unwrap() in parse_header crashes on a truncated header",
            "Malformed headers make the parser panic instead of returning an error",
            "parse_header should return Err, not panic, for bad input",
        ]),
        ("rs-dbg", "code_quality", 90, [
            "dbg! macro left in parse_body",
            "Remove the dbg!() call in the parser",
            "parse_body still prints its state with dbg!",
            "Leftover debug macro in src/parser.rs",
        ]),
        ("rs-overflow", "error_handling", 110, [
            "Integer overflow when computing the body length",
            "length * count can overflow u32 in parse_body",
            "Body size arithmetic overflows on large inputs",
            "Use checked_mul for the body length (overflow)",
        ]),
    ]),
    # ---- Ruby / PHP / C#
    ("app/models/subscription.rb", [
        ("rb-callback", "error_handling", 23, [
            "after_save callback sends the email even when the save is rolled back",
            "Welcome email goes out although the transaction fails",
            "Emails are sent inside the transaction (use after_commit)",
            "Subscription sends mail before the record is committed",
        ]),
        ("rb-puts", "code_quality", 47, [
            "puts left in Subscription#renew",
            "Remove debugging puts from renew",
            "renew still writes to stdout with puts",
            "Stray puts statement in subscription.rb",
        ]),
    ]),
    ("src/Controller/UploadController.php", [
        ("php-traversal", "security", 35, [
            "Path traversal in the download action: filename not sanitized",
            "Download accepts ../ in the file name and reads arbitrary files",
            "User-supplied filename is joined to the upload dir without normalisation",
            "Directory traversal via the `file` query parameter",
        ]),
        ("php-size", "error_handling", 19, [
            "Upload size limit is not enforced",
            "Files larger than 10 MB are accepted",
            "No maximum size check on uploads",
            "upload() never checks the file size",
        ]),
    ]),
    ("Services/PaymentService.cs", [
        ("cs-deadlock", "error_handling", 52, [
            "Deadlock: .Result on an async call in ChargeAsync",
            "Blocking on a Task with .Result can deadlock the request thread",
            "ChargeAsync waits synchronously on the gateway call",
            "Sync-over-async in PaymentService hangs under load",
        ]),
        ("cs-retry", "error_handling", 81, [
            "Payment retries have no backoff",
            "The gateway is retried immediately in a tight loop",
            "No exponential backoff between charge retries",
            "Retry loop hammers the payment gateway without delay",
        ]),
    ]),
    # ---- Tests and coverage (files are test or source files)
    ("tests/test_checkout.py", [
        ("test-checkout-total", "unit_test", 40, [
            "test_checkout_total fails: expected 19.99, got 20.0",
            "test_checkout_total is still failing",
            "Failing test: test_checkout_total (rounding)",
            "test_checkout_total still fails after the fix",
        ]),
        ("test-checkout-empty", "unit_test", 61, [
            "test_checkout_empty_cart fails with KeyError",
            "test_checkout_empty_cart is still red",
            "Failing test test_checkout_empty_cart",
            "test_checkout_empty_cart errors out (KeyError: 'items')",
        ]),
    ]),
    ("src/billing/tax.py", [
        ("cov-tax", "coverage", None, [
            "Coverage of src/billing/tax.py is 54%, below the 80% minimum",
            "tax.py line coverage still below 80% (now 67%)",
            "Insufficient test coverage for tax.py: 61%",
            "tax.py needs more tests: coverage under the required threshold",
        ]),
        ("tax-rounding", "acceptance_criteria", 30, [
            "VAT is rounded per line instead of per invoice",
            "Tax rounding happens on each line item, not on the total",
            "Per-line VAT rounding gives totals off by a cent",
            "Round VAT once on the invoice total",
        ]),
    ]),
    ("e2e/checkout.spec.ts", [
        ("e2e-checkout", "e2e_test", 12, [
            "E2E: checkout flow fails at the payment step",
            "Payment step of the checkout flow fails in the e2e test",
            "The checkout e2e test breaks when submitting payment",
            "e2e checkout: cannot get past payment",
        ]),
        ("e2e-login", "e2e_test", 40, [
            "E2E: login flow does not redirect to the dashboard",
            "After logging in, the e2e test never reaches the dashboard",
            "Login e2e test: redirect to /dashboard missing",
            "Dashboard redirect after login fails in the login flow test",
        ]),
    ]),
    ("src/services/notify.js", [
        ("js-unhandled", "error_handling", 22, [
            "Unhandled promise rejection in sendNotification",
            "sendNotification does not catch a rejected fetch",
            "Missing .catch() on the fetch in sendNotification",
            "A failing notification request crashes the process (unhandled rejection)",
        ]),
        ("js-timeout", "performance", 30, [
            "No timeout on the notification HTTP request",
            "sendNotification can hang forever waiting for the provider",
            "fetch in sendNotification has no AbortController timeout",
            "Requests to the notification provider never time out",
        ]),
        ("js-cmdi", "security", 55, [
            "Command injection: exec() with the user-supplied channel name",
            "child_process.exec is called with unsanitized input in notify.js",
            "Shell command built from request data in sendNotification",
            "OS command injection through the `channel` argument",
        ]),
    ]),
    ("src/utils/dates.py", [
        ("dates-tz", "error_handling", 12, [
            "parse_date ignores the timezone offset",
            "Dates with +02:00 are parsed as UTC",
            "Timezone information is dropped by parse_date",
            "parse_date loses the offset of ISO timestamps",
        ]),
        ("dates-leap", "error_handling", 12, [
            "parse_date rejects February 29 in leap years",
            "Leap-day dates raise ValueError in parse_date",
            "2024-02-29 is reported as an invalid date",
            "parse_date fails on leap days",
        ]),
    ]),
    ("lib/queue/worker.ex", [
        ("ex-retry-forever", "error_handling", 44, [
            "Worker retries failed jobs forever",
            "No maximum attempt count for failing jobs",
            "A poison job is retried endlessly by the worker",
            "Failed jobs are never moved to the dead-letter queue",
        ]),
        ("ex-io-inspect", "code_quality", 70, [
            "IO.inspect left in the worker",
            "Remove the debugging IO.inspect call in perform/1",
            "Worker still dumps every job with IO.inspect",
            "Leftover IO.inspect(job) in worker.ex",
        ]),
    ]),
]

# Hard negatives: (comment, type_a, a, line_a, type_b, b, line_b, file) — different problems.
HARD = [
    ("same endpoint, another wrong status", "acceptance_criteria",
     "POST /orders returns 500 instead of 422 for an invalid body", 30, "acceptance_criteria",
     "POST /orders returns 400 instead of 422 for an invalid body", 30, "src/api/orders.py"),
    ("same endpoint, another expected status", "acceptance_criteria",
     "DELETE /users/{id} answers 200 instead of 204", 88, "acceptance_criteria",
     "DELETE /users/{id} answers 200 instead of 404 for an unknown user", 88, "src/api/users.py"),
    ("same title far apart in a long file", "error_handling",
     "Missing null check before dereferencing the result", 120, "error_handling",
     "Missing null check before dereferencing the result", 1480, "src/main/java/com/acme/legacy/Monolith.java"),
    ("same title far apart in a long file", "code_quality",
     "Magic number should be a named constant", 40, "code_quality",
     "Magic number should be a named constant", 960, "src/engine/pricing.ts"),
    ("same title far apart in a long file", "error_handling",
     "Error is ignored", 210, "error_handling",
     "Error is ignored", 1730, "internal/legacy/handlers.go"),
    ("different requirements, nearby lines", "acceptance_criteria",
     "Username must be at most 30 characters", 44, "acceptance_criteria",
     "Username must not contain spaces", 46, "src/forms/signup.ts"),
    ("different requirements, nearby lines", "acceptance_criteria",
     "CSV export must include a header row", 12, "acceptance_criteria",
     "CSV export must quote fields containing commas", 14, "src/export/csv.py"),
    ("different requirements, nearby lines", "error_handling",
     "Quantity must be a positive integer", 60, "error_handling",
     "Quantity must not exceed the stock level", 62, "src/cart/service.py"),
    ("different requirements, nearby lines", "acceptance_criteria",
     "Search results must be sorted by relevance", 20, "acceptance_criteria",
     "Search results must be paginated 20 per page", 23, "src/search/query.rb"),
    ("another case of one check", "unit_test",
     "No test for an empty cart", 10, "unit_test",
     "No test for a cart with one item", 10, "tests/test_cart.py"),
    ("another case of one check", "error_handling",
     "parse_amount crashes on an empty string", 7, "error_handling",
     "parse_amount crashes on a negative amount", 7, "src/money.py"),
    ("opposite symptoms", "performance",
     "Session timeout is too short (5 minutes)", 15, "performance",
     "Session timeout is too long (30 days)", 15, "config/session.ts"),
    ("another debug statement, another file", "code_quality",
     "console.log left in the Header component", 21, "code_quality",
     "console.log left in the Footer component", 21, None),
    ("another injection kind, same function", "security",
     "SQL injection in search()", 30, "security",
     "Cross-site scripting in search() results page", 30, "src/search/views.py"),
    ("race vs deadlock, same type", "error_handling",
     "Race condition on the balance update in transfer()", 50, "error_handling",
     "Deadlock between two concurrent transfers in transfer()", 50, "src/bank/transfer.go"),
    ("same test, different defect", "unit_test",
     "test_refund fails: refund amount is negative", 33, "unit_test",
     "test_refund is missing an assertion on the audit log", 33, "tests/test_refund.py"),
    ("different tests", "unit_test",
     "test_login_with_valid_password fails", 14, "unit_test",
     "test_login_with_expired_password fails", 30, "tests/test_auth.py"),
    ("different flows", "e2e_test",
     "E2E: password reset flow fails at the email step", 8, "e2e_test",
     "E2E: signup flow fails at the email step", 8, "e2e/auth.spec.ts"),
]

SHIFTS = [0, 2, -3, 5, 1, 12, -1, 7]
PREFIXES = ["", "", "[HIGH] ", "", "Bug: ", "", "Regression - ", ""]


def split_of(sid: str) -> str:
    return "heldout" if zlib.crc32(sid.encode()) % 10 < 4 else "tune"


def side(title, kind, file, line):
    out = {"title": title, "type": kind}
    if file is not None:
        out["file"] = file
    if line is not None:
        out["line"] = line
    return out


def main():
    pairs = []
    for file, scenarios in FILES:
        for sid, kind, line, says in scenarios:
            for n, (x, y) in enumerate(itertools.combinations(range(len(says)), 2)):
                shift = SHIFTS[(n + len(sid)) % len(SHIFTS)]
                prefix = PREFIXES[(n * 3 + len(sid)) % len(PREFIXES)]
                # Now and then a side without its file (older plans) or its line.
                file_b = None if (n + len(sid)) % 7 == 0 else file
                line_b = None if line is None or (n + len(sid)) % 5 == 0 else line + shift
                pairs.append({
                    "comment": f"{sid}: restatement {x + 1} vs {y + 1}",
                    "kind": "restated",
                    "same": True,
                    "split": split_of(sid),
                    "group": sid,
                    "a": side(says[x], kind, file, line),
                    "b": side(prefix + says[y], kind, file_b, line_b),
                })
        # Different defects of one file, on the lines they are on.
        for (s1, k1, l1, t1), (s2, k2, l2, t2) in itertools.combinations(scenarios, 2):
            group = min(s1, s2) + "|" + max(s1, s2)
            # Held out when either scenario is.
            split = "heldout" if "heldout" in (split_of(s1), split_of(s2)) else "tune"
            for i in range(2):
                a, b = t1[i], t2[(i + 1) % len(t2)]
                pairs.append({
                    "comment": f"{s1} vs {s2}: different defects of one file",
                    "kind": "different_defect_same_file",
                    "same": False,
                    "split": split,
                    "group": group,
                    "a": side(a, k1, file, l1),
                    "b": side(b, k2, file, l2),
                })
    for i, (comment, ka, a, la, kb, b, lb, file) in enumerate(HARD):
        sid = f"hard-{i}"
        fa = file if file else "src/components/Header.tsx"
        fb = file if file else "src/components/Footer.tsx"
        pairs.append({
            "comment": comment,
            "kind": "hard_negative",
            "same": False,
            "split": split_of(sid),
            "group": sid,
            "a": side(a, ka, fa, la),
            "b": side(b, kb, fb, lb),
        })
    json.dump(pairs, __import__("sys").stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
