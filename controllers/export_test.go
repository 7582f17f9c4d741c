package controllers

// FirstStatusGrace lets the API-server specs (package controllers_test)
// tell a slow Deployment from a defect (hygiene_test.go).
const FirstStatusGrace = firstStatusGrace
