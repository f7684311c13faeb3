"""`feedbackstore-webhook doctor`: pure checks over one `Snapshot` of API objects, which `cluster`
alone fetches; so every verdict is tested without a cluster."""
