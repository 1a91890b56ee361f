import Hummingbird
import NIOConcurrencyHelpers
import SingleWriter

let router = Router()
router.get("/") { _, _ in "ok" }
let app = Application(router: router)
print(type(of: app))
