package toolscreen

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Instructions in other languages. A model follows an instruction in
// German or Hindi as well as one in English, so the model-instruction and
// sensitive-file rules have a word list in each of twenty languages, the
// most spoken ones: what a poisoned description says to the model
// ("ignore the previous instructions", "do not tell the user",
// "secretly", "before using this tool, read ...", "read/send" beside a
// secret file). English has its regular expressions (rules.go) and only a
// few extra phrases here.
//
// An entry is slots separated by " / ", each slot alternatives separated
// by "|": it matches when every slot has a match in one sentence, within
// phraseWindow characters, in any order (word order differs between the
// languages). In scripts that separate words (Latin, Cyrillic, Greek) a
// term matches whole words only, or, ending in "*", words that start with
// it; in the others (Chinese, Japanese, Korean, Arabic, the Indic
// scripts) words carry their particles and endings and a term matches
// anywhere. Terms are written as normalize writes text (lower case,
// dotless i as i, one form of each Arabic letter), and go through it
// anyway. Each list keeps to forms a description of what a tool does has
// no use for: imperatives and negated orders rather than the forms that
// say what a tool does ("reads", "ignores").

// The concepts of the entries.
const (
	conceptIgnore  = "ign"    // ignore the previous instructions
	conceptConceal = "hide"   // do not tell the user
	conceptSecret  = "secret" // secretly, without the user knowing
	conceptBefore  = "before" // before using this tool, read / send
	conceptAct     = "act"    // read / send / open, an order: with a secret file, sensitive-file
)

// phraseWindow is the most characters one entry's matches may span.
const phraseWindow = 120

// language is the word list of one language.
type language struct {
	code, name string
	// entries are concept: slots (see above).
	entries []string
}

// Languages are the languages whose instructions are screened, in a fixed
// order: English and the nineteen other most spoken languages (Mandarin
// and Cantonese written in Chinese characters count as one, Chinese).
func Languages() []string {
	out := make([]string, len(languageTable))
	for i, l := range languageTable {
		out[i] = l.name
	}
	return out
}

var languageTable = []language{
	{"en", "English", []string{
		"secret: secretly|covertly|surreptitiously|without the user knowing|without the user's knowledge|without the users knowledge|without the user noticing|behind the user's back|without the user's consent|without user consent",
		"ign: forget everything|disregard everything / above|before this|you were told|you have been told|you've been told|said before|said above",
	}},
	{"zh", "Chinese", []string{
		"ign: 忽略|无视|無視|忘记|忘記|忽视|忽視|不要理会|不要理會|别管|別管|不要遵循|不要遵守 / 指令|指示|说明|說明|规则|規則|提示词|提示詞 / 之前|以前|先前|上面|以上|前面|所有|原有|原来|原來|系统|系統|一切",
		"hide: 不要|别|別|切勿|不得|勿|不能|千万不要|千萬不要|唔好|咪 / 告诉|告訴|提及|提到|透露|通知|说|說|讲|講|话|話|让|讓 / 用户|用戶|使用者",
		"secret: 秘密地|偷偷|悄悄地|暗中|私下|用户不知情|用戶不知情|使用者不知情|不让用户知道|不讓用戶知道|不讓使用者知道|瞒着用户|瞞著用戶|背着用户|背著用戶|唔好俾用戶知",
		"before: 使用此工具|使用本工具|使用该工具|使用該工具|使用这个工具|使用這個工具|调用此工具|调用本工具|調用此工具|呼叫此工具|用呢個工具 / 之前|以前|前 / 读取|讀取|阅读|閱讀|打开|打開|发送|發送|上传|上傳|获取|獲取",
		"act: 请|請|先|务必|務必|必须|必須|一定要 / 读取|讀取|阅读|閱讀|打开|打開|发送|發送|上传|上傳|附上|复制|複製",
	}},
	{"hi", "Hindi", []string{
		"ign: अनदेखा|नजरअंदाज|नज़रअंदाज़|भूल जाओ|भूल जाएं|भूल जाएँ|भूल जाइए|ध्यान न दें|ध्यान मत दो|उपेक्षा / निर्देश|आदेश|नियम|प्रॉम्प्ट|हिदायत / पिछले|पहले के|पूर्व|ऊपर के|सभी|सिस्टम|मूल",
		"hide: उपयोगकर्ता|यूज़र|यूजर|प्रयोक्ता / मत बताना|मत बताओ|मत बताएं|मत बताएँ|न बताएं|न बताएँ|ना बताएं|नहीं बताना|मत बताइए|न बताना|जानकारी न दें|मत कहना|न कहें|पता न चले|पता नहीं चलना चाहिए",
		"secret: चुपके से|गुप्त रूप से|चुपचाप|छिपकर|उपयोगकर्ता को बताए बिना|उपयोगकर्ता की जानकारी के बिना|यूजर को बताए बिना",
		"before: इस टूल|इस उपकरण / से पहले|पहले / पढ़ें|पढ़ो|पढ़िए|खोलें|खोलो|भेजें|भेजो|भेजिए|अपलोड करें",
		"act: पढ़ें|पढ़ो|पढ़िए|खोलें|खोलो|खोलिए|भेजें|भेजो|भेजिए|अपलोड करें|शामिल करें|कॉपी करें",
	}},
	{"es", "Spanish", []string{
		"ign: olvida todo|olvide todo|olviden todo|olvidá todo|ignora todo|ignorá todo / anterior|antes|previo|de arriba|lo que te dijeron",
		"ign: ignora|ignore|ignorá|ignorad|ignoren|olvida|olvidá|olvide|olviden|omite|omita|descarta|descarte|haz caso omiso|hagan caso omiso / instrucciones|indicaciones|reglas|órdenes|prompt del sistema|mensaje del sistema / anteriores|previas|previos|precedentes|de arriba|originales|del sistema|todas las",
		"hide: no|nunca|jamás / digas|diga|digan|menciones|mencione|mencionen|informes|informe|reveles|revele|avises|avise|cuentes|cuente|comentes|notifiques|notifique / usuario*|usuaria*",
		"secret: en secreto|secretamente|a escondidas|sin que el usuario lo sepa|sin que el usuario se entere|sin informar al usuario|sin avisar al usuario|sin conocimiento del usuario|de forma oculta|de manera oculta",
		"before: antes de usar|antes de utilizar|antes de llamar|antes de invocar|antes de ejecutar / esta herramienta|este tool|esta función / lee|lea|abre|abra|envía|envia|envíe|envie|manda|mande|carga|cargue",
		"act: lea|abra|envíe|envie|mande|incluya|adjunte|copie|léelo|leelo|léalo|ábrelo|ábralo|envíalo|envialo|envíelo|mándalo|pásalo|páselo|inclúyelo|cópialo",
	}},
	{"fr", "French", []string{
		"ign: ignore|ignorez|ignorer|oublie|oubliez|oublier|néglige|négligez|fais abstraction|faites abstraction / instructions|consignes|directives|règles|invite système|prompt système / précédent*|antérieur*|ci-dessus|plus haut|initial*|du système|toutes les",
		"hide: ne|n'en|n'y / dis|dites|mentionne|mentionnez|révèle|révélez|informe|informez|préviens|prévenez|signale|signalez|parle|parlez / utilisateur*|utilisatrice*",
		"secret: en secret|secrètement|à l'insu de l'utilisateur|sans que l'utilisateur le sache|sans que l'utilisateur s'en aperçoive|sans prévenir l'utilisateur|sans informer l'utilisateur|en cachette",
		"before: avant d'utiliser|avant d'appeler|avant d'invoquer|avant d'exécuter|avant toute utilisation de / cet outil|cette fonction / lis|lisez|ouvre|ouvrez|envoie|envoyez|charge|chargez",
		"act: lis|lisez|ouvrez|envoyez|transmets|transmettez|copiez|incluez|joignez|passez|lis-le|envoie-le|ouvre-le|transmets-le",
	}},
	{"ar", "Arabic", []string{
		"ign: تجاهل|اهمل|لا تلتزم|لا تتبع|لا تعمل ب / التعليمات|تعليمات|الاوامر|اوامر|القواعد|التوجيهات|موجه النظام / السابقه|الاصليه|اعلاه|كل|جميع|النظام",
		"hide: لا / تخبر|تخبري|تقل|تقولي|تذكر|تبلغ|تعلم|تكشف|تفصح|تطلع / المستخدم",
		"secret: سرا|خفيه|خلسه|دون علم المستخدم|بدون علم المستخدم|دون ان يعلم المستخدم|دون اخبار المستخدم|بدون اخبار المستخدم|دون ان يلاحظ المستخدم",
		"before: قبل / استخدام|استعمال|تشغيل|استدعاء / هذه الاداه|هذا الاداه|هذه الوظيفه / اقرا|افتح|ارسل|حمل",
		"act: اقرا|افتح|ارسل|ارفق|انسخ",
	}},
	{"bn", "Bengali", []string{
		"ign: উপেক্ষা কর|উপেক্ষা করো|উপেক্ষা করুন|ভুলে যাও|ভুলে যান|অগ্রাহ্য কর|পাত্তা দিও না / নির্দেশ|নির্দেশনা|আদেশ|নিয়ম|প্রম্পট / আগের|পূর্ববর্তী|পূর্বের|উপরের|সব|সমস্ত|সিস্টেম",
		"hide: ব্যবহারকারী|ইউজার / বলবে না|বলবেন না|বলো না|বলবি না|জানাবে না|জানাবেন না|জানিও না|উল্লেখ করবেন না|উল্লেখ করো না|জানতে দেবেন না|জানতে দিও না",
		"secret: গোপনে|চুপিচুপি|লুকিয়ে|ব্যবহারকারীকে না জানিয়ে|ব্যবহারকারীর অজান্তে",
		"before: এই টুল|এই সরঞ্জাম / আগে / পড়ুন|পড়ো|খুলুন|খোলো|পাঠান|পাঠাও|আপলোড করুন",
		"act: পড়ুন|পড়ো|খুলুন|খোলো|পাঠাও|আপলোড করুন|যুক্ত করুন|কপি করুন",
	}},
	{"pt", "Portuguese", []string{
		"ign: ignore|ignora|ignorem|esqueça|esqueca|esquece|desconsidere|desconsidera|despreze / instruções|instrucoes|orientações|orientacoes|regras|comandos|prompt do sistema / anteriores|prévias|previas|acima|originais|do sistema|todas as",
		"hide: não|nao|nunca|jamais / diga|digas|conte|mencione|informe|avise|revele|notifique / usuário*|usuario*|utilizador*",
		"secret: secretamente|em segredo|às escondidas|as escondidas|sem que o usuário saiba|sem que o usuario saiba|sem o usuário saber|sem informar o usuário|sem avisar o usuário|sem o conhecimento do usuário|sem que o utilizador saiba",
		"before: antes de usar|antes de utilizar|antes de chamar|antes de executar / esta ferramenta|este tool|esta função / leia|abra|envie|mande|carregue",
		"act: leia|abra|envie|mande|inclua|anexe|copie|leia-o|envie-o|abra-o",
	}},
	{"ru", "Russian", []string{
		"ign: игнорируй*|проигнорируй*|забудь*|не обращай внимания|не обращайте внимания|пренебреги|не учитывай* / инструкци*|указани*|правил*|промпт*|команд* / предыдущ*|прежн*|выше|вышеуказанн*|систем*|исходн*|ранее|все",
		"ign: забудь|забудьте|игнорируй*|проигнорируй* / всё|все / ранее|раньше|до этого|прежде|выше",
		"hide: не|никогда / говори*|сообщай*|сообщи*|упоминай*|рассказывай*|расскажи*|раскрывай*|уведомляй*|информируй* / пользовател*",
		"secret: тайно|втайне|тайком|скрытно|незаметно для пользователя|без ведома пользователя|не сообщая пользователю|не уведомляя пользователя",
		"before: перед использованием|прежде чем использовать|перед вызовом|перед запуском / этого инструмента|этот инструмент|этой функции|эту функцию / прочитай*|прочти*|открой*|отправь*|загрузи*|считай*",
		"act: прочитай*|прочти*|открой*|отправь*|перешли*|передай*|скопируй*|загрузи*|считай*",
	}},
	{"ur", "Urdu", []string{
		"ign: نظرانداز|نظر انداز|بھول جاؤ|بھول جائیں|فراموش / ہدایات|ہدایت|احکامات|قواعد|اصول|پرامپٹ / پچھلی|پچھلے|سابقہ|پہلے کی|اوپر کی|تمام|سسٹم|اصل",
		"hide: صارف|یوزر / مت بتانا|مت بتاؤ|نہ بتائیں|نہیں بتانا|مت بتائیں|نہ بتاؤ|ذکر نہ کریں|ذکر مت کرو|اطلاع نہ دیں|پتہ نہ چلے",
		"secret: چپکے سے|خفیہ طور پر|چھپ کر|صارف کو بتائے بغیر|صارف کی اطلاع کے بغیر|صارف کے علم کے بغیر",
		"before: اس ٹول|اس آلے / پہلے / پڑھیں|پڑھو|کھولیں|کھولو|بھیجیں|بھیجو|اپلوڈ کریں|اپ لوڈ کریں",
		"act: پڑھیں|پڑھو|کھولیں|کھولو|بھیجیں|بھیجو|اپلوڈ کریں|اپ لوڈ کریں|شامل کریں|کاپی کریں",
	}},
	{"id", "Indonesian", []string{
		"ign: abaikan|lupakan|jangan hiraukan|jangan ikuti|acuhkan / instruksi|perintah|aturan|petunjuk|arahan|prompt sistem / sebelumnya|terdahulu|di atas|semua|sistem|asli",
		"hide: jangan / beri tahu|beritahu|kasih tahu|memberi tahu|memberitahu|sebutkan|menyebutkan|ungkapkan|mengungkapkan|katakan|bilang|informasikan / pengguna|user|pemakai",
		"secret: diam-diam|secara diam-diam|secara rahasia|tanpa sepengetahuan pengguna|tanpa memberi tahu pengguna|tanpa memberitahu pengguna|tanpa diketahui pengguna",
		"before: sebelum / menggunakan|memakai|memanggil|menjalankan / alat ini|tool ini|fungsi ini / baca|bacalah|buka|bukalah|kirim|kirimkan|unggah",
		"act: baca|bacalah|buka|bukalah|kirim|kirimkan|kirimlah|unggah|unggahlah|sertakan|lampirkan|salin",
	}},
	{"de", "German", []string{
		"ign: ignoriere|ignorier|ignorieren|vergiss|vergesst|vergessen|missachte|missachten / anweisung*|instruktion*|befehl*|regeln|vorgaben|richtlinien|prompts / vorherig*|bisherig*|vorig*|obig*|früher*|vorangegangen*|ursprünglich*",
		"ign: vergiss alles|vergesst alles|vergessen sie alles|ignoriere alles|ignorieren sie alles / vorher|zuvor|bisher|davor|oben|bisherige|vorherige",
		"ign: ignoriere|ignorier|ignorieren|vergiss|vergesst|vergessen|missachte|missachten / systemprompt*|system-prompt*|systemanweisung*|sicherheitsrichtlinien",
		"hide: sag|sage|sagen|erzähl*|verrat*|erwähn*|informier*|mitteil*|benachrichtig*|teile / benutzer*|nutzer*|anwender*|user / nicht|nichts|niemals|keinesfalls|kein wort",
		"hide: erwähne das nicht|erwähne dies nicht|erwähne es nicht|erwähnen sie das nicht|erwähnen sie dies nicht|verrate nichts|verraten sie nichts",
		"secret: heimlich|insgeheim|ohne wissen des benutzers|ohne wissen des nutzers|ohne dass der benutzer es merkt|ohne dass der nutzer es merkt|ohne den benutzer zu informieren|ohne den nutzer zu informieren|ohne es dem benutzer zu sagen|hinter dem rücken",
		"before: bevor du|bevor sie|bevor|vor der verwendung|vor der nutzung|vor dem aufruf|vor dem einsatz / dieses tool*|dieses werkzeug*|dieser funktion|diese funktion|dieses tools / lies|lesen sie|öffne|öffnen sie|sende|senden sie|schick*|übermittle|übermitteln sie|übergib|übergeben sie",
		"act: lies|lesen sie|öffne|öffnen sie|sende|senden sie|schicke|schick|schicken sie|übergib|übergeben sie|übermittle|übermitteln sie|kopiere|kopieren sie",
	}},
	{"ja", "Japanese", []string{
		"ign: 無視|忘れて|忘れろ|従わないで|従うな|無効にして / 指示|命令|ルール|指令|プロンプト / 以前|これまで|前の|上記|先の|すべての|全ての|元の|既存の|システム",
		"hide: ユーザー|ユーザ|利用者|使用者 / 言わない|言うな|伝えない|伝えるな|知らせない|知らせるな|教えない|教えるな|話さない|話すな|明かさない|明かすな|言わずに|伝えずに|知らせずに|気づかれない|気付かれない|バレない",
		"secret: こっそり|密かに|ひそかに|内緒で|秘密裏に|気づかれずに|気付かれずに|知られずに",
		"before: このツール|本ツール|当ツール / 前に / 読んで|読み込んで|読み取って|開いて|送信して|送って|アップロードして|読み込み|読み取り",
		"act: 読んでください|読み込んでください|読み取ってください|開いてください|送信してください|送ってください|含めてください|添付してください|アップロードしてください|読め|送れ|読み込め",
	}},
	{"pcm", "Nigerian Pidgin", []string{
		"ign: no mind|forget|ignore|no follow|comot for mind / instruction*|rule* / wey dem give you|wey dem don give you|wey dem tell you|all di|everytin",
		"ign: forget|no mind|comot for mind / everything wey dem tell you|everytin wey dem tell you|wetin dem tell you before|wetin dem don tell you|all di tori wey dem",
		"hide: no tell|no talk|no let|no mention|make sure say / di user|the user|user",
		"hide: make di user no know|make the user no know|make user no know|no let di user sabi|di user no go know|the user no go know",
		"secret: for corner corner|quietly quietly|hide am from di user|hide am from the user|without di user know|make nobody know",
		"before: before you use|before you call|before you run / dis tool|this tool|dis function / read|carry|send|open|collect",
		"act: abeg read|abeg send|abeg open|read am|send am|carry am|go read|go open|make you read|make you send",
	}},
	{"mr", "Marathi", []string{
		"ign: दुर्लक्ष कर|दुर्लक्ष करा|विसरून जा|विसरा / सूचना|निर्देश|आदेश|नियम / मागील|आधीच्या|पूर्वीच्या|वरील|सर्व|सिस्टम",
		"hide: वापरकर्त्याला|वापरकर्ता|युजरला|यूजरला / सांगू नका|सांगू नकोस|कळवू नका|कळवू नकोस|कळू देऊ नका|कळू देऊ नकोस",
		"secret: गुपचूप|गुप्तपणे|वापरकर्त्याला न सांगता|वापरकर्त्याला कळू न देता",
		"before: हे साधन|हे टूल|या साधनाचा|या टूलचा / वापरण्यापूर्वी|वापरण्याआधी|चालवण्यापूर्वी / वाचा|उघडा|पाठवा|अपलोड करा",
		"act: वाचा|उघडा|पाठवा|अपलोड करा|समाविष्ट करा|कॉपी करा",
	}},
	{"te", "Telugu", []string{
		"ign: పట్టించుకోకు|పట్టించుకోవద్దు|విస్మరించు|విస్మరించండి|మర్చిపో|మర్చిపోండి|మరచిపో / సూచనలు|సూచనల|ఆదేశాలు|ఆదేశాల|నియమాలు|నిబంధనలు|ప్రాంప్ట్ / మునుపటి|ముందటి|గత|పై|అన్ని|సిస్టమ్|అసలు",
		"hide: వినియోగదారు|యూజర్|వాడుకరి / చెప్పకు|చెప్పవద్దు|చెప్పొద్దు|తెలియజేయకు|తెలియజేయవద్దు|తెలియనివ్వకు|తెలియనివ్వద్దు|ప్రస్తావించకు|ప్రస్తావించవద్దు",
		"secret: రహస్యంగా|దొంగచాటుగా|గుట్టుగా|వినియోగదారుకు తెలియకుండా|యూజర్‌కు తెలియకుండా",
		"before: ఈ టూల్|ఈ సాధన / ముందు / చదవండి|తెరవండి|పంపండి|అప్‌లోడ్ చేయండి",
		"act: చదవండి|తెరవండి|పంపండి|అప్‌లోడ్ చేయండి|జోడించండి|కాపీ చేయండి",
	}},
	{"tr", "Turkish", []string{
		"ign: yok say*|yoksay*|görmezden gel*|unut|unutun|dikkate alma|umursama / talimat*|komut*|kural*|yönerge*|istem* / önceki|önceden|yukarıdaki|tüm|bütün|sistem*|orijinal|asıl",
		"hide: kullanıcı* / söyleme|söylemeyin|bahsetme|bahsetmeyin|belirtmeyin|bildirmeyin|haber verme|haber vermeyin",
		"secret: gizlice|kullanıcıya fark ettirmeden|kullanıcı fark etmeden|kullanıcının haberi olmadan|habersizce|kimseye söylemeden",
		"before: bu aracı|bu araç|bu tool|bu fonksiyonu / kullanmadan önce|çağırmadan önce|çalıştırmadan önce|önce / oku|okuyun|aç|açın|gönder|gönderin|yükle|yükleyin",
		"act: oku|okuyun|aç|açın|gönder|gönderin|yükle|yükleyin|kopyala|kopyalayın",
	}},
	{"ta", "Tamil", []string{
		"ign: புறக்கணி|மறந்துவிடு|மறந்து விடு|மறந்துவிடுங்கள்|கண்டுகொள்ளாதே|பொருட்படுத்தாதே / அறிவுறுத்தல்|வழிமுறைகள்|கட்டளைகள்|விதிகள்|ப்ராம்ப்ட் / முந்தைய|முன்பு|மேலே|அனைத்து|எல்லா|சிஸ்டம்|அசல்",
		"hide: பயனர|பயனாளர|யூசர / சொல்லாதே|சொல்ல வேண்டாம்|சொல்லவேண்டாம்|தெரிவிக்காதே|தெரிவிக்க வேண்டாம்|தெரியப்படுத்த வேண்டாம்|குறிப்பிடாதே|குறிப்பிட வேண்டாம்|தெரியக்கூடாது",
		"secret: ரகசியமாக|இரகசியமாக|பயனருக்குத் தெரியாமல்|பயனருக்கு தெரியாமல்|யாருக்கும் தெரியாமல்",
		"before: இந்த கருவி|இந்தக் கருவி|இந்த டூல் / முன் / படிக்கவும்|திறக்கவும்|அனுப்பவும்|பதிவேற்றவும்",
		"act: படிக்கவும்|திறக்கவும்|அனுப்பவும்|பதிவேற்றவும்|சேர்க்கவும்|நகலெடுக்கவும்",
	}},
	{"vi", "Vietnamese", []string{
		"ign: bỏ qua|phớt lờ|lờ đi|quên|quên đi|không tuân theo|đừng làm theo / hướng dẫn|chỉ dẫn|chỉ thị|lệnh|quy tắc|lời nhắc hệ thống / trước đó|trước|ở trên|phía trên|tất cả|hệ thống|ban đầu",
		"hide: đừng|chớ|tuyệt đối không|không được / nói|kể|cho biết|tiết lộ|thông báo|đề cập|báo / người dùng",
		"secret: lén lút|lén|một cách bí mật|không cho người dùng biết|mà người dùng không biết|không để người dùng biết",
		"before: trước khi / sử dụng|dùng|gọi|chạy / công cụ này|tool này|hàm này / đọc|mở|gửi|tải lên",
		"act: hãy đọc|hãy mở|hãy gửi|hãy tải lên|hãy đính kèm|đọc nội dung|gửi nội dung",
	}},
	{"ko", "Korean", []string{
		"ign: 무시|잊어|잊고|따르지 마|따르지 말 / 지시|지침|명령|규칙|프롬프트 / 이전|앞의|위의|기존|모든|시스템|원래",
		"hide: 사용자|유저|이용자 / 말하지 마|말하지마|알리지 마|알리지마|알려주지 마|알려주지마|언급하지 마|언급하지마|밝히지 마|말하지 말|알리지 말|언급하지 말",
		"secret: 몰래|비밀리에|은밀히|사용자 모르게|사용자가 모르게|사용자가 알지 못하게",
		"before: 이 도구|이 툴|본 도구 / 전에 / 읽어|읽고|열어|보내|전송|업로드",
		"act: 읽어라|읽어 주세요|읽어주세요|읽으세요|열어라|열어 주세요|열어주세요|보내라|보내세요|보내 주세요|보내주세요|전송하세요|전송해 주세요|전송해주세요|업로드하세요|포함하세요",
	}},
}

// phraseTerm is one alternative of a slot, as compiled.
type phraseTerm struct {
	text   string
	prefix bool // matches words that start with it
	words  bool // matches whole words (its script separates words)
	// uses are the entries and slots it is an alternative of.
	uses []termUse
}

type termUse struct{ entry, slot int }

// phraseEntry is one compiled entry.
type phraseEntry struct {
	lang    string
	concept string
	slots   int
}

// phraseTable is the compiled word lists: the terms by their first two
// bytes, so that a text is read once, each place looked up in a map.
// (An Aho-Corasick automaton of the terms costs 35 ms and 18 MB to build,
// at a hub's first screening, for no gain at the length of descriptions.)
type phraseTable struct {
	byStart map[uint16][]int // term indexes
	terms   []phraseTerm
	entries []phraseEntry
}

func startKey(s string) uint16 { return uint16(s[0])<<8 | uint16(s[1]) }

// compilePhrases compiles languageTable with normalize.
func compilePhrases(p *patterns) *phraseTable {
	t := &phraseTable{byStart: map[uint16][]int{}}
	index := map[string]int{}
	for _, l := range languageTable {
		for _, e := range l.entries {
			concept, body, _ := strings.Cut(e, ": ")
			ei := len(t.entries)
			slots := strings.Split(body, " / ")
			t.entries = append(t.entries, phraseEntry{lang: l.name, concept: concept, slots: len(slots)})
			for si, slot := range slots {
				for _, alt := range strings.Split(slot, "|") {
					prefix := strings.HasSuffix(alt, "*")
					w := p.normalize(strings.TrimSuffix(alt, "*"))
					key := w
					if prefix {
						key += "*"
					}
					ti, ok := index[key]
					if !ok && len(w) >= 2 {
						ti = len(t.terms)
						index[key] = ti
						t.terms = append(t.terms, phraseTerm{text: w, prefix: prefix, words: separatesWords(w)})
						t.byStart[startKey(w)] = append(t.byStart[startKey(w)], ti)
					} else if !ok {
						continue // a term of one byte is no phrase (a test holds the table to none)
					}
					t.terms[ti].uses = append(t.terms[ti].uses, termUse{entry: ei, slot: si})
				}
			}
		}
	}
	return t
}

// separatesWords says whether w's script writes spaces between words.
func separatesWords(w string) bool {
	for _, r := range w {
		if unicode.IsLetter(r) {
			return unicode.In(r, unicode.Latin, unicode.Cyrillic, unicode.Greek)
		}
	}
	return true
}

// phraseHit is one entry matched in one sentence.
type phraseHit struct {
	lang, concept string
	start, end    int // of the matches, in the text
}

// match returns the entries matched in n (normalized), at most one per
// concept and language, in the order of the text. ends are the offsets
// where n's sentences end (sorted).
func (t *phraseTable) match(n string, ends []int) []phraseHit {
	var byEntry map[int][]slotMatch
	wordStart := true
	for i, r := range n {
		atStart := wordStart
		wordStart = !isWordRune(r)
		// Terms of scripts that separate words start a word; the others
		// start anywhere but in ASCII.
		if !atStart && r < utf8.RuneSelf || i+1 >= len(n) {
			continue
		}
		for _, ti := range t.byStart[startKey(n[i:])] {
			term := &t.terms[ti]
			end := i + len(term.text)
			if !strings.HasPrefix(n[i:], term.text) || term.words && !wordAt(n, i, end, term.prefix) {
				continue
			}
			sentence := sort.SearchInts(ends, i+1)
			for _, u := range term.uses {
				if byEntry == nil {
					byEntry = map[int][]slotMatch{}
				}
				byEntry[u.entry] = append(byEntry[u.entry], slotMatch{u.slot, i, end, sentence})
			}
		}
	}
	var out []phraseHit
	seen := map[[2]string]bool{}
	for ei, fs := range byEntry {
		e := t.entries[ei]
		if seen[[2]string{e.lang, e.concept}] {
			continue
		}
		// Anchored at each match of the first slot: the nearest match of
		// every other slot in its sentence.
		for _, a := range fs {
			if a.slot != 0 {
				continue
			}
			lo, hi, ok := a.start, a.end, true
			for s := 1; s < e.slots && ok; s++ {
				best, dist := -1, 0
				for j, b := range fs {
					if b.slot != s || b.sentence != a.sentence || a.overlaps(b.start, b.end) {
						continue
					}
					d := max(b.end-a.start, a.end-b.start)
					if best < 0 || d < dist {
						best, dist = j, d
					}
				}
				if best < 0 {
					ok = false
					break
				}
				lo, hi = min(lo, fs[best].start), max(hi, fs[best].end)
			}
			if ok && utf8.RuneCountInString(n[lo:hi]) <= phraseWindow {
				out = append(out, phraseHit{lang: e.lang, concept: e.concept, start: lo, end: hi})
				seen[[2]string{e.lang, e.concept}] = true
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// slotMatch is a term's match for one slot of an entry, in the sentence
// of that index.
type slotMatch struct{ slot, start, end, sentence int }

// overlaps says whether [start, end) overlaps a's match: one word cannot
// fill two slots.
func (a slotMatch) overlaps(start, end int) bool { return start < a.end && a.start < end }

// wordAt says whether n[start:end] is a whole word (or, with prefix, the
// start of one).
func wordAt(n string, start, end int, prefix bool) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(n[:start])
		if isWordRune(r) {
			return false
		}
	}
	if !prefix && end < len(n) {
		r, _ := utf8.DecodeRuneInString(n[end:])
		if isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) }
