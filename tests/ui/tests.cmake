# The operator's dashboard: its files as served (in process), and the page in headless Chromium
# against the real daemons (tests/ui/dashboard_test.py driving dashboard_browser.cjs with
# playwright-core from scripts/install-realcli; release pass only, like the other e2e tests).
aios_test(ui_tests ui/ui_test.cpp)

add_test(NAME dashboard_browser
  COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/ui/dashboard_test.py")
set_tests_properties(dashboard_browser PROPERTIES LABELS e2e TIMEOUT 300
  ENVIRONMENT "AIOS_BUILD_DIR=${PROJECT_BINARY_DIR}")
