// Package methods names the JSON-RPC methods and notifications of MCP that
// the mount knows. It is the one place their names are spelled: each
// dialect's method table (modern.table, session.table) is keyed by them,
// and the core, the ownership tracker and the transports name a method
// through them. It imports nothing, so that every package of the mount,
// the leaf libraries among them, may use it.
package methods

// Requests.
const (
	Initialize            = "initialize"
	Ping                  = "ping"
	Discover              = "server/discover"
	ToolsList             = "tools/list"
	ToolsCall             = "tools/call"
	TasksGet              = "tasks/get"
	TasksUpdate           = "tasks/update"
	TasksCancel           = "tasks/cancel"
	TasksResult           = "tasks/result"
	TasksList             = "tasks/list"
	ResourcesList         = "resources/list"
	ResourceTemplatesList = "resources/templates/list"
	ResourcesRead         = "resources/read"
	ResourcesSubscribe    = "resources/subscribe"
	ResourcesUnsubscribe  = "resources/unsubscribe"
	PromptsList           = "prompts/list"
	PromptsGet            = "prompts/get"
	Complete              = "completion/complete"
	SetLoggingLevel       = "logging/setLevel"
	Listen                = "subscriptions/listen"
	// Elicit is the server's request for input from the client.
	Elicit = "elicitation/create"
)

// Notifications.
const (
	// NotificationPrefix begins the name of every notification.
	NotificationPrefix        = "notifications/"
	Cancelled                 = "notifications/cancelled"
	Initialized               = "notifications/initialized"
	RootsListChanged          = "notifications/roots/list_changed"
	Progress                  = "notifications/progress"
	Tasks                     = "notifications/tasks"
	SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
)

// Other is the metric label of a method no dialect counts by name.
const Other = "other"
